const hidden = (html) => {
  const form = new URLSearchParams();
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
    form.set(name, value);
  }
  return form;
};

// What a person's browser does at Tessera's login page, for the relying-party scripts:
// load the form, post it with its hidden fields (and allow on the consent page, which
// a third-party client gets), and follow to the callback.
export async function browserLogin(url, username, password, fail) {
  const page = await fetch(url, { redirect: 'manual' });
  if (page.status !== 200) fail(`login page status ${page.status}: ${page.headers.get('location') ?? await page.text()}`);
  const cookies = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const form = hidden(await page.text());
  form.set('username', username);
  form.set('password', password);
  const done = await fetch(new URL('/login', url), {
    method: 'POST', redirect: 'manual', body: form,
    headers: { cookie: cookies, 'content-type': 'application/x-www-form-urlencoded' },
  });
  const session = done.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const all = `${cookies}; ${session}`;
  let answer = done;
  if (done.status === 200) {
    const consent = await done.text();
    if (!consent.includes('Allow access?')) fail(`after login: ${consent.slice(0, 300)}`);
    const decision = hidden(consent);
    decision.set('decision', 'allow');
    answer = await fetch(new URL('/consent', url), {
      method: 'POST', redirect: 'manual', body: decision,
      headers: { cookie: all, 'content-type': 'application/x-www-form-urlencoded' },
    });
  }
  if (answer.status !== 303 && answer.status !== 302) fail(`login status ${answer.status}: ${answer.headers.get('location')}`);
  return { callback: new URL(answer.headers.get('location')), cookies: all };
}

// The claims of a JWT, unverified (the library verified what it had to).
export function payload(jwt) {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
}
