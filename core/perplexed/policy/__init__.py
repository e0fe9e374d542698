"""Pure rules and tables, no I/O: options (one catalogue) and their validation, the status table, failure
classification, rolling windows and cool-downs, budgets, routing files."""
