"""What nsbench keeps on disk between runs, and how it writes it.

- ``digests``: hashing bytes, files and code (a module and what it imports);
- ``keys``: what each cache entry's key is made of (clip, engine, metrics, checks);
- ``cache``: the entries themselves (outputs, scores, reference features), checked on reading;
- ``reference``: the reference-side features metrics share across engines;
- ``atomic``: the one way any file is put in place (temporary name, then a rename).
"""
