"""The trial explorer: imported trial folders, their pages, comparisons and the calibration ladder."""
