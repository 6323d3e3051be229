"""HTTP routes beyond the core ones: screens and answers, stats, notifications, metrics, pages."""
