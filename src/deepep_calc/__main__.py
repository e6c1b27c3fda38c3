"""`python -m deepep_calc`: the same command as the `deepep-calc` script (handy in a venv
that is not activated, or when the script directory is not on PATH)."""

from .cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
