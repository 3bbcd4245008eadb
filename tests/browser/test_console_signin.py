"""The browser fixtures themselves: a real server, a real sign-in."""


def test_demo_participant_signs_in(participant_page):
    assert "Signed in as" in participant_page.inner_text("header.site-header")
    assert participant_page.locator("nav strong").inner_text() == "participant"


def test_wrong_password_shows_the_error(page):
    page.goto("/login/")
    page.fill("input[name=username]", "participant")
    page.fill("input[name=password]", "wrong")
    page.click("form.stacked button[type=submit]")
    assert page.locator("p.error").inner_text() == "That username and password did not match."
