"""The estimate stage's public names under their first import path, ``logmem.estimate.model``.

The stage is split by concern (see logmem/estimate/__init__.py); this module only re-exports,
so code written against the old path keeps working. Import from ``logmem.estimate``.
"""

from logmem.estimate import *  # noqa: F403
from logmem.estimate import __all__ as __all__
