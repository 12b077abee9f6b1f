"""The ``sparkcdc`` command line: a thin layer over ``pipeline``."""
