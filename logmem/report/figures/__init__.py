"""Figures of every report: a backend-neutral scene, its SVG writer and matplotlib replay, and the plots drawn on it."""
