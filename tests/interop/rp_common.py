"""What the authlib relying-party scripts share: failing with a message, and what a
person's browser does at Tessera's login page."""

import re
import sys

import requests


def checker(name):
    def check(cond, what):
        if not cond:
            sys.exit(f"{name}: {what}")

    return check


def browser_login(issuer, url, username, password, check):
    """Load the form, post it with its hidden fields; the browser and the callback URL."""
    browser = requests.Session()
    page = browser.get(url, allow_redirects=False)
    check(page.status_code == 200, f"login page status {page.status_code}: {page.text[:300]}")
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
    fields.update(username=username, password=password)
    done = browser.post(f"{issuer}/login", data=fields, allow_redirects=False)
    check(done.status_code == 303, f"login status {done.status_code}")
    return browser, done.headers["Location"]
