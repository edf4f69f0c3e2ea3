"""Loads oscrypto (pyas2lib's crypto backend) on OpenSSL 3.0.10 and later without editing it.

oscrypto 1.3.0, the newest on PyPI, reads libcrypto's version with the pattern
`\\b(\\d\\.\\d\\.\\d[a-z]*)\\b`, which finds nothing in "OpenSSL 3.0.19" (the `1` of `19` is no word
boundary), and refuses to load: every pyas2lib import fails. The fix is in oscrypto's repository but
not released. Importing this module first loads oscrypto's OpenSSL binding with that one pattern
widened to several-digit version parts, then restores `re.search`; nothing on disk changes.
"""

import re

_BROKEN = "\\b(\\d\\.\\d\\.\\d[a-z]*)\\b"
_FIXED = r"\b(\d+\.\d+\.\d+[a-z]*)\b"
_search = re.search


def _search_with_fixed_version_pattern(pattern, string, flags=0):
    return _search(_FIXED if pattern == _BROKEN else pattern, string, flags)


re.search = _search_with_fixed_version_pattern
try:
    import oscrypto.asymmetric  # noqa: F401  (binds libcrypto once, with the widened pattern)
finally:
    re.search = _search
