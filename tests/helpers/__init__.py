"""Plain helpers the tests import (``from tests.helpers.audio import ...``);
the fixtures stay in tests/conftest.py, where pytest finds them."""
