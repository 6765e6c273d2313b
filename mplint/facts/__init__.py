"""Shared pre-analysis of a module that every rule reads: names, policy, Keras target."""
