"""Console sink: every change printed in Flink's print format, for trying things out."""
