"""The HTML pages: report.html and the parts compare.html shares."""
