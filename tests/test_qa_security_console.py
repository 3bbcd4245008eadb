"""The console's own URLconf offers no unthrottled sign-in, wherever it is included."""
from django.urls import get_resolver

from console.signin import ThrottledLoginView


def test_the_consoles_own_sign_in_route_is_the_throttled_one():
    route = next(p for p in get_resolver("console.urls").url_patterns if p.name == "login")
    assert route.callback.view_class is ThrottledLoginView
