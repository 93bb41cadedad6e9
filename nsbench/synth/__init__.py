"""Signal generators for the embedded demo test set: synthetic speech and noises."""
