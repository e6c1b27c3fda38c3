"""`python -m deepep_calc.cli` runs the program, as `python -m deepep_calc` does."""

from .program import main

if __name__ == "__main__":  # pragma: no cover
    main()
