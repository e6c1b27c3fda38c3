"""The foundation every layer uses: quantities with units and provenance, typed errors."""
