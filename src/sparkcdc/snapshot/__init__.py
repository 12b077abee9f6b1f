"""Engine-neutral incremental snapshot framework: chunk splitting, normalisation, cursors."""
