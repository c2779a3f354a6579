"""Renderers: read a Report, write to the stream they are given; no collecting, no judging."""
