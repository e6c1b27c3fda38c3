"""Files in and out: importers (AIPerf, kernel logs, run folders) and the safe writer."""
