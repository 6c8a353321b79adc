"""Counterfeit records and a catalog for h-ceiled k-anonymity (seed 002); see method.py."""
from .method import METHOD, Counterfeit, CounterfeitParams

__all__ = ["METHOD", "Counterfeit", "CounterfeitParams"]
