"""ssl.principal.mapping.rules, with the cases of Kafka's SslPrincipalMapperTest."""

from __future__ import annotations

import pytest

from node.security.ssl_principal_mapper import NoMatchingRuleError, SslPrincipalMapper
from odradek.errors import InvalidConfigError


def test_default_keeps_the_whole_subject():
    assert SslPrincipalMapper().name("CN=alice,OU=Users,O=Example") == "CN=alice,OU=Users,O=Example"


def test_rules_are_tried_in_order_and_the_first_match_wins():
    mapper = SslPrincipalMapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,"
        "DEFAULT"
    )
    assert mapper.name("CN=duke,OU=ServiceUsers,O=Org,L=City,ST=State,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme") == "DUKE"
    assert mapper.name("OU=JavaSoft,O=Sun") == "OU=JavaSoft,O=Sun"


def test_whitespace_around_rules_and_escaped_slashes():
    mapper = SslPrincipalMapper("  RULE:^CN=([^\\/]*)\\/x$/$1/  ,  DEFAULT  ")
    assert mapper.name("CN=a/x") == "a"
    # a group number above the group count is literal text
    assert SslPrincipalMapper("RULE:^CN=(.*)$/$1-$2/").name("CN=a") == "a-$2"


def test_no_matching_rule_fails():
    mapper = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRuleError, match="no rule"):
        mapper.name("CN=someone,OU=Users")


@pytest.mark.parametrize(
    "rules", ["DEFAULTS", "RULE:/", "RULE:^CN=(.*?)/$1/X", "RULE:((/$1/", "garbage"]
)
def test_invalid_rules(rules):
    with pytest.raises(InvalidConfigError):
        SslPrincipalMapper(rules)
