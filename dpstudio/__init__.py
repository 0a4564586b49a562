"""dpstudio: a differential-privacy release assistant for sensitive tables."""

__version__ = "0.1.0"
