"""Engine-neutral vocabulary: events, table ids, schemas, offsets, options, errors.

Never imports pyspark or a database driver: everything here is tested without services.
"""
