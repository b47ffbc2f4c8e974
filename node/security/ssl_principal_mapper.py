"""``ssl.principal.mapping.rules``: a client certificate's subject → a principal name (Kafka's
``SslPrincipalMapper``).

The rules are a comma-separated list tried in order, the first that matches giving the name::

    RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L,DEFAULT

``RULE:<regex>/<replacement>/[L|U]``: the regex must match the *whole* distinguished name
(RFC 2253, e.g. ``CN=alice,OU=Users,O=Example``); ``$1``.. in the replacement are its groups (a
group number above the group count is literal text, as in Kafka); ``\\`` escapes the next
character of the replacement; ``L``/``U`` lower- or upper-case the result. ``DEFAULT`` keeps the
whole DN. When no rule matches, mapping fails (:class:`NoMatchingRuleError`) and so does the
client's authentication, as in Kafka. Regexes are Python's, which agree with Java's for the
usual patterns.

Pure; the mapper is immutable and thread-safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from odradek.errors import InvalidConfigError, OdradekError

__all__ = ["NoMatchingRuleError", "SslPrincipalMapper"]

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class NoMatchingRuleError(OdradekError):
    """No rule of ``ssl.principal.mapping.rules`` matches a certificate's subject."""

    name = "SSL_AUTHENTICATION_FAILED"


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        match = self.pattern.fullmatch(dn)
        if match is None:
            return None
        result = _substitute(self.replacement, match)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result


def _substitute(replacement: str, match: re.Match[str]) -> str:
    """Java's ``Matcher.replaceAll`` replacement over the one whole-DN match: ``$n`` is group
    n (a number above the group count loses digits from the right until it fits, else stays
    literal), ``\\x`` is ``x``."""
    groups = match.re.groups
    out: list[str] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        ref = _BACK_REFERENCE.match(replacement, i) if c == "$" else None
        if ref is None:
            out.append(c)
            i += 1
            continue
        digits = ref.group(1)
        while len(digits) > 1 and int(digits) > groups:
            digits = digits[:-1]
        if digits.startswith("0") or int(digits) > groups:
            out.append("$" + digits)
        else:
            out.append(match.group(int(digits)) or "")
        i += 1 + len(digits)
    return "".join(out)


class SslPrincipalMapper:
    """Parsed ``ssl.principal.mapping.rules``. Construction raises ``InvalidConfigError`` for
    an invalid rule or regex."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules_text = rules
        parsed = (_parse(r) for r in _split(rules))
        self._rules = tuple(r for r in parsed if r is not None)

    def name(self, distinguished_name: str) -> str:
        """The principal name for ``distinguished_name``; raises :class:`NoMatchingRuleError`
        when no rule matches."""
        for rule in self._rules:
            result = rule.apply(distinguished_name)
            if result is not None:
                return result
        raise NoMatchingRuleError(
            f"no rule of ssl.principal.mapping.rules ({self.rules_text}) applies to "
            f"{distinguished_name!r}"
        )


def _split(rules: str) -> list[str]:
    return [m.group(1) for m in _SPLITTER.finditer(rules.strip()) if m.group(1)]


def _parse(rule: str) -> _Rule | None:
    match = _PARSER.match(rule)
    if match is None or match.end() != len(rule):
        raise InvalidConfigError(f"ssl.principal.mapping.rules: invalid rule {rule!r}")
    if match.group(1) is not None:
        return _Rule(None)
    if match.group(2) is None:
        raise InvalidConfigError(f"ssl.principal.mapping.rules: invalid rule {rule!r}")
    try:
        pattern = re.compile(match.group(2))
    except re.error as e:
        raise InvalidConfigError(
            f"ssl.principal.mapping.rules: invalid regex in {rule!r}: {e}"
        ) from None
    return _Rule(pattern, match.group(4), match.group(6) == "L", match.group(6) == "U")
