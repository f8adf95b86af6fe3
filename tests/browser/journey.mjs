// Drives Debian's Chromium through Tessera the way an operator and a user would:
// setup link → first admin → admin signs in → registers a client and a user → adds
// Grafana from its preset and checks the configuration to paste → previews the tokens
// the user would get from it and runs its test sign-in → signs out → the user signs
// in through the client's authorization flow → enrols TOTP → signs out → signs in
// with password and a TOTP code. Every page is screenshotted
// (desktop, and the key pages at 360 px) into $SHOTS.
//
// Environment: BASE (Tessera's issuer URL), SETUP_URL (the printed link), SHOTS
// (directory for PNGs), CHROMIUM (browser path, default /usr/bin/chromium).

import { chromium } from "playwright-core";
import { totp } from "./totp.mjs";
import jsQR from "jsqr";
import { PNG } from "pngjs";
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { mkdirSync } from "node:fs";

const BASE = process.env.BASE;
const SETUP_URL = process.env.SETUP_URL;
const SHOTS = process.env.SHOTS;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
if (!BASE || !SETUP_URL || !SHOTS) throw new Error("BASE, SETUP_URL and SHOTS are required");
mkdirSync(SHOTS, { recursive: true });

const ADMIN = { username: "operator", email: "operator@example.com", password: "a long admin passphrase 7" };
const USER = { username: "alice", email: "alice@example.com", password: "alice's own password" };
const GRAFANA = { clientId: "grafana", url: "https://grafana.example.org",
  redirect: "https://grafana.example.org/login/generic_oauth" };

function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}

// The `key = value` lines of one `[section]` of an INI file, or null without it.
function iniSection(text, name) {
  let out = null;
  let inside = false;
  for (const line of text.split("\n").map((l) => l.trim())) {
    const header = line.match(/^\[(.+)\]$/);
    if (header) {
      inside = header[1] === name;
      if (inside) out = {};
    } else if (inside && line && !line.startsWith(";") && !line.startsWith("#")) {
      const eq = line.indexOf("=");
      if (eq > 0) out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
    }
  }
  return out;
}


// A minimal relying party: /start sends the browser to Tessera with PKCE, /cb
// exchanges the code and shows who signed in and how (amr).
const rp = { secret: null, pending: new Map() };
const b64url = (buf) => buf.toString("base64url");
const server = createServer(async (req, res) => {
  const url = new URL(req.url, `http://${req.headers.host}`);
  if (url.pathname === "/start") {
    const verifier = b64url(randomBytes(32));
    const state = b64url(randomBytes(16));
    rp.pending.set(state, verifier);
    const q = new URLSearchParams({
      response_type: "code", client_id: "demo", redirect_uri: rp.callback, scope: "openid profile email",
      state, nonce: b64url(randomBytes(16)),
      code_challenge: b64url(createHash("sha256").update(verifier).digest()), code_challenge_method: "S256",
    });
    res.writeHead(302, { location: `${BASE}/authorize?${q}` }).end();
    return;
  }
  if (url.pathname === "/cb") {
    const verifier = rp.pending.get(url.searchParams.get("state"));
    const code = url.searchParams.get("code");
    if (!verifier || !code) { res.writeHead(400).end(`no code: ${url.search}`); return; }
    // The back channel goes to the address itself (Node may try ::1 for localhost).
    const token = await fetch(`${BASE.replace("//localhost:", "//127.0.0.1:")}/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: "Basic " + Buffer.from(`demo:${rp.secret}`).toString("base64"),
      },
      body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: rp.callback, code_verifier: verifier }),
    }).then((r) => r.json());
    const claims = JSON.parse(Buffer.from(token.id_token.split(".")[1], "base64url").toString());
    res.writeHead(200, { "content-type": "text/html" }).end(
      `<!doctype html><meta name=viewport content="width=device-width"><title>Demo app</title>` +
      `<h1>Demo app</h1><p>Signed in as <b id="who">${claims.preferred_username}</b></p>` +
      `<p>amr: <b id="amr">${claims.amr.join(" ")}</b> · acr: <b id="acr">${claims.acr}</b></p>`);
    return;
  }
  res.writeHead(404).end();
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
rp.base = `http://127.0.0.1:${server.address().port}`;
rp.callback = `${rp.base}/cb`;

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
let shot = 0;
async function snap(page, name) {
  shot += 1;
  const file = `${SHOTS}/${String(shot).padStart(2, "0")}-${name}.png`;
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot ${file}`);
}
async function noSideways(page, name) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  check(width <= 360, `${name} fits 360 px (scrollWidth ${width})`);
}
// Clicks and waits for the page the click leads to.
async function submit(page, selector) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}
async function signIn(page, who) {
  await page.fill("#username", who.username);
  await page.fill("#password", who.password);
  await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
}
async function signOut(page) {
  await page.goto(`${BASE}/logout`);
  await snap(page, "sign-out");
  await submit(page, "button:has-text('Sign out')");
  check((await page.content()).includes("signed out"), "signed out page");
}

try {
  const desktop = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await desktop.newPage();

  // 1. The setup link creates the first administrator.
  await page.goto(SETUP_URL);
  await snap(page, "setup");
  await page.fill("#password", "short");
  await page.fill("#confirm", "short");
  await page.fill("#username", ADMIN.username);
  await page.fill("#email", ADMIN.email);
  await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
  check(await page.isVisible("#password-error"), "a weak password is refused next to its field");
  await snap(page, "setup-error");
  await page.fill("#password", ADMIN.password);
  await page.fill("#confirm", ADMIN.password);
  await Promise.all([page.waitForLoadState(), page.click("button[type=submit]")]);
  check((await page.textContent("h1")).includes("Administrator created"), "administrator created");
  await snap(page, "setup-done");

  // 2. The administrator signs in to the admin pages.
  await page.goto(`${BASE}/admin`);
  await snap(page, "admin-login");
  await signIn(page, ADMIN);
  check(page.url().endsWith("/admin"), `back on /admin after sign-in (${page.url()})`);
  await snap(page, "admin-dashboard");

  // 3. Registers the client; the secret is shown once.
  await page.goto(`${BASE}/admin/clients/new`);
  await page.fill("#client_id", "demo");
  await page.fill("#name", "Demo app");
  await page.fill("#redirect_uris", rp.callback);
  await snap(page, "admin-client-new");
  await submit(page, "button:has-text('Register')");
  rp.secret = (await page.textContent("#client-secret")).trim();
  check(rp.secret.length > 20, "client secret shown");
  await snap(page, "admin-client-created");

  // 4. Creates the user.
  await page.goto(`${BASE}/admin/users`);
  await page.fill("#new-username", USER.username);
  await page.fill("#new-email", USER.email);
  await page.fill("#new-name", "Alice Example");
  await page.fill("#new-password", USER.password);
  await submit(page, "button:has-text('Create user')");
  check((await page.textContent("h1")).includes(USER.username), "user page");
  await snap(page, "admin-user-created");

  // 4a. Adds Grafana from its preset: the configuration to paste is shown once.
  await page.goto(`${BASE}/admin/clients`);
  await snap(page, "admin-clients");
  await submit(page, "a#new-app");
  check(page.url() === `${BASE}/admin/clients/new-app`, `the link leads to Add an application (${page.url()})`);
  await page.check("#preset-grafana");
  await page.fill("#app_url", GRAFANA.url);
  await page.fill("#client_id", GRAFANA.clientId);
  await snap(page, "admin-app-new");
  await submit(page, "#new-app button[type=submit]");
  await page.waitForSelector("#app-added");
  const grafanaSecret = (await page.textContent("#client-secret")).trim();
  check(grafanaSecret.length > 20, "the Grafana client's secret is shown");
  const redirects = await page.$$eval("#redirect-uris code", (els) => els.map((e) => e.textContent.trim()));
  check(redirects.includes(GRAFANA.redirect), `registered redirect URI (${redirects})`);
  const ini = iniSection((await page.textContent("#snippet")).trim(), "auth.generic_oauth");
  check(ini, "the snippet has an [auth.generic_oauth] section");
  // The endpoints Grafana is told are ours, as the issuer's discovery document says.
  const discovery = await fetch(`${BASE.replace("//localhost:", "//127.0.0.1:")}/.well-known/openid-configuration`)
    .then((r) => r.json());
  for (const [key, path, field] of [["auth_url", "/authorize", "authorization_endpoint"],
    ["token_url", "/token", "token_endpoint"], ["api_url", "/userinfo", "userinfo_endpoint"]]) {
    check(ini[key] === `${BASE}${path}` && ini[key] === discovery[field], `${key} = ${ini[key]}`);
  }
  check(ini.client_id === GRAFANA.clientId, `client_id = ${ini.client_id}`);
  check(ini.client_secret === grafanaSecret, "the snippet carries the secret shown");
  check(ini.role_attribute_path === "grafana_role", `role_attribute_path = ${ini.role_attribute_path}`);
  check(ini.scopes && ini.scopes.split(/[ ,]+/).includes("openid"), `scopes = ${ini.scopes}`);
  await snap(page, "admin-app-added");
  // Shown once: neither the form again nor the client's pages repeat the secret.
  for (const path of ["/admin/clients/new-app", `/admin/clients/${GRAFANA.clientId}`, "/admin/clients"]) {
    await page.goto(`${BASE}${path}`);
    check(!(await page.content()).includes(grafanaSecret), `${path} does not show the secret again`);
    check((await page.locator("#client-secret").count()) === 0, `${path} has no secret box`);
  }
  check(await page.isVisible(`a[href="/admin/clients/${GRAFANA.clientId}"]`), "Grafana is in the clients list");

  // 4b. The token preview: what alice would get from Grafana now, and why.
  await submit(page, `a[href="/admin/clients/${GRAFANA.clientId}"]`);
  await page.waitForSelector("#claim-rules");
  check((await page.textContent("#claim-rules")).includes("grafana_role"), "the preset's claim mapping is listed");
  await snap(page, "admin-client-grafana");
  await submit(page, "#preview-link");
  await page.fill("#user", USER.username);
  await page.fill("#scope", ini.scopes.replaceAll(",", " "));
  await submit(page, "#preview-form button[type=submit]");
  check(new URL(page.url()).pathname === `/admin/clients/${GRAFANA.clientId}/preview`
    && new URL(page.url()).searchParams.get("user") === USER.username, `preview URL (${page.url()})`);
  await page.waitForSelector("table#id-token");
  const claimsOf = (id) => page.$$eval(`table#${id} tbody tr`, (rows) => Object.fromEntries(rows.map((r) => {
    const [name, value, why] = [...r.querySelectorAll("td")].map((td) => td.textContent.trim());
    return [name, { value, why }];
  })));
  const preview = { "id-token": await claimsOf("id-token"), "access-token": await claimsOf("access-token"),
    userinfo: await claimsOf("userinfo") };
  for (const [target, claims] of Object.entries(preview)) {
    check(Object.keys(claims).length > 0, `${target} has claims`);
    for (const [name, c] of Object.entries(claims)) check(c.why.length > 0, `${target} ${name} says why`);
    check(claims.sub, `${target} has sub`);
  }
  for (const target of ["id-token", "userinfo"]) {
    const role = preview[target].grafana_role;
    check(role && role.value === '"Viewer"', `${target} grafana_role is Viewer (${role && role.value})`);
    check(role.why.includes('claim mapping "grafana_role"'), `${target} grafana_role why: ${role.why}`);
  }
  check(!preview["access-token"].grafana_role, "the mapping leaves grafana_role out of the access token");
  check(preview["id-token"].preferred_username?.value === `"${USER.username}"`, "the preview is alice's");
  check(preview["id-token"].aud?.value.includes(GRAFANA.clientId), "the ID token is for Grafana");
  await snap(page, "admin-client-preview");

  // 4c. Test sign-in: a real authorization for the administrator, checked as an RP would.
  await page.goto(`${BASE}/admin/clients/${GRAFANA.clientId}`);
  check(await page.isVisible("#test-sign-in button[type=submit]"), "the client page offers a test sign-in");
  await submit(page, "#test-sign-in button[type=submit]");
  await page.waitForSelector("#test-result, #test-refused");
  check(!(await page.isVisible("#test-refused")), "the test sign-in is not refused");
  check((await page.textContent("#test-result")).includes("Every check passed"), "every check passed");
  const results = await page.$$eval("#checks tbody tr", (rows) => rows.map((r) =>
    [...r.querySelectorAll("td")].map((td) => td.textContent.trim())));
  for (const name of ["ID token signature", "iss", "aud", "nonce", "at_hash"]) {
    const row = results.find((r) => r[0] === name);
    check(row && row[1] === "pass", `check ${name} passes (${row})`);
  }
  check((await page.textContent("#revoked")).includes("was revoked"), "the test grant was revoked");
  await snap(page, "admin-client-test");

  await page.goto(`${BASE}/admin/audit`);
  await snap(page, "admin-audit");

  // 5. Signs out.
  await signOut(page);

  // 6. The user signs in through the client's authorization flow.
  await page.goto(`${rp.base}/start`);
  check((await page.content()).includes("Demo app"), "the login page names the client");
  await snap(page, "login-for-client");
  await signIn(page, USER);
  check((await page.textContent("#who")) === USER.username, "the client received alice");
  check((await page.textContent("#amr")) === "pwd", "password only");
  await snap(page, "client-signed-in");

  // 7. Enrols an authenticator on the account page.
  await page.goto(`${BASE}/account`);
  await snap(page, "account");
  await submit(page, "#totp-setup");
  check(await page.isVisible(".qr svg"), "QR code drawn");
  const secret = (await page.textContent("#totp-secret")).trim();
  await snap(page, "totp-enrol");
  // What a phone's camera would read: the QR code decodes to the otpauth URI of this key.
  const png = PNG.sync.read(await page.locator(".qr").screenshot());
  const qr = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
  check(qr && qr.data.startsWith("otpauth://totp/") && qr.data.includes(`secret=${secret}&`), `QR decodes (${qr && qr.data})`);
  console.log(`qr ${qr.data.replace(secret, "<secret>")}`);
  await page.fill("#code", totp(secret, Date.now() / 1000));
  await submit(page, "button:has-text('Turn on')");
  const codes = await page.$$eval("#recovery-codes code", (els) => els.map((e) => e.textContent));
  check(codes.length === 10, "ten recovery codes");
  await snap(page, "totp-recovery-codes");

  // 8. Signs out, 9. signs in again with password and a code.
  await signOut(page);
  await page.goto(`${rp.base}/start`);
  await signIn(page, USER);
  check(await page.isVisible("input#code"), "asked for a code after the password");
  await snap(page, "mfa-prompt");
  await page.fill("#code", "000000");
  await submit(page, "button:has-text('Verify')");
  check(await page.isVisible("#code-error"), "a wrong code is refused next to the field");
  await snap(page, "mfa-error");
  // The enrolment spent the current step; the next one is inside the ±1 window.
  await page.fill("#code", totp(secret, Date.now() / 1000 + 30));
  await submit(page, "button:has-text('Verify')");
  check((await page.textContent("#who")) === USER.username, "signed in with two factors");
  check((await page.textContent("#amr")) === "pwd otp mfa", "amr says password and one-time code");
  await snap(page, "client-signed-in-mfa");

  // 10. Adds a passkey (Chromium's virtual authenticator stands in for the phone),
  // signs out, and signs in with the passkey alone.
  const cdp = await desktop.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", { options: {
    protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true,
    isUserVerified: true, automaticPresenceSimulation: true } });
  await page.goto(`${BASE}/account`);
  check(await page.isVisible("#passkey-add"), "the passkey button shows where WebAuthn exists");
  await page.fill("#passkey-name", "Test laptop");
  await Promise.all([page.waitForURL(/done=passkey/), page.click("#passkey-add")]);
  check((await page.textContent("#passkeys")).includes("Test laptop"), "the passkey is listed");
  await snap(page, "account-passkey-added");
  await signOut(page);
  // Conditional UI: the login page asks for a passkey in the username field's autofill
  // (autocomplete="username webauthn"); the virtual authenticator answers as a person
  // picking it there would, and the sign-in completes without a click.
  await page.goto(`${rp.base}/start`);
  await page.waitForURL(`${rp.base}/cb**`);
  check((await page.textContent("#who")) === USER.username, "signed in by picking the passkey from autofill");
  check((await page.textContent("#amr")) === "swk user mfa", "amr says key and user verification");
  await snap(page, "client-signed-in-passkey-autofill");
  // A browser without conditional UI (from the next page on): the button asks at once.
  await signOut(page);
  await page.addInitScript(() => {
    PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);
  });
  await page.goto(`${rp.base}/start`);
  check(await page.isVisible("#passkey-login"), "the login page offers the passkey");
  await Promise.all([page.waitForURL(`${rp.base}/cb**`), page.click("#passkey-login")]);
  check((await page.textContent("#who")) === USER.username, "signed in with the passkey");
  check((await page.textContent("#amr")) === "swk user mfa", "amr says key and user verification");
  await snap(page, "client-signed-in-passkey");

  // 11. The same pages on a 360 px phone.
  const phone = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
  const small = await phone.newPage();
  await small.goto(`${BASE}/account`);
  await noSideways(small, "login page");
  check((await small.getAttribute("#username", "autocomplete")) === "username webauthn",
    "the username field offers passkeys in its autofill");
  await snap(small, "phone-login");
  // The picker shows the same sign-in in German, and the German pages (longer words)
  // still fit the phone.
  await submit(small, "#lang-de");
  check((await small.getAttribute("html", "lang")) === "de", "the picker switches the page to German");
  check((await small.textContent("h1")).trim() === "Anmelden", "the sign-in heading in German");
  check((await small.getAttribute("#lang-de", "aria-current")) === "true", "the picker marks German");
  await noSideways(small, "login page in German");
  await snap(small, "phone-login-de");
  await signIn(small, ADMIN);
  check((await small.getAttribute("html", "lang")) === "de", "the pick holds after signing in");
  await noSideways(small, "account page");
  await snap(small, "phone-account");
  for (const path of ["/admin", "/admin/users", "/admin/clients/new", "/admin/clients/new-app", "/admin/audit"]) {
    await small.goto(`${BASE}${path}`);
    await noSideways(small, path);
    await snap(small, `phone-${path.slice(1).replaceAll("/", "-")}`);
  }

  // 12. The dashboard's charts after the sign-ins, failures and grants above: on the
  // phone (no sideways scrolling, chart text still at least 9 px tall) and on a desktop.
  await small.goto(`${BASE}/admin`);
  for (const id of ["chart-signins", "chart-grants"]) {
    check(await small.isVisible(`#${id} svg[role=img]`), `${id} is drawn`);
  }
  const hours = await small.$$eval("#chart-signins .bucket", (els) => els.length);
  check(hours >= 1, `sign-ins drawn per hour (${hours} hours with events)`);
  const clients = await small.$$eval("#chart-grants .row", (els) => els.length);
  check(clients >= 1, `token grants drawn per client (${clients})`);
  const smallest = await small.$$eval(".chart text", (els) =>
    Math.min(...els.map((e) => e.getBoundingClientRect().height)));
  check(smallest >= 9, `chart text readable at 360 px (smallest ${smallest.toFixed(1)} px)`);
  await noSideways(small, "dashboard");
  await snap(small, "dashboard-phone");
  await small.setViewportSize({ width: 1280, height: 900 });
  await small.goto(`${BASE}/admin`);
  await snap(small, "dashboard-desktop");
  await small.setViewportSize({ width: 360, height: 740 });
  await small.reload();
  await noSideways(small, "dashboard after resizing back");

  // 13. The login page in other languages (the browser's Accept-Language picks them),
  // then branded through the admin page: a name, a colour and an SVG logo.
  for (const [locale, lang, heading] of [["fr-FR", "fr", "Connexion"], ["es-ES", "es", "Iniciar sesión"]]) {
    const speaking = await browser.newContext({ locale });
    const p = await speaking.newPage();
    await p.goto(`${BASE}/account`);
    check((await p.getAttribute("html", "lang")) === lang, `Accept-Language ${locale} gives ${lang}`);
    check((await p.textContent("h1")).trim() === heading, `the sign-in heading in ${lang}`);
    await snap(p, `login-${lang}`);
    await speaking.close();
  }
  await small.setViewportSize({ width: 1280, height: 900 });
  await small.goto(`${BASE}/admin/branding`);
  await small.fill("#org-name", "Example Co-op");
  await small.fill("#accent-color", "#0b7a3e");
  const logo = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 120 32"><rect width="32" height="32" rx="6" fill="#0b7a3e"/>' +
    '<circle cx="16" cy="16" r="8" fill="#fff"/><rect x="40" y="10" width="76" height="12" rx="3" fill="#1d2330"/></svg>';
  await small.setInputFiles("#logo", { name: "logo.svg", mimeType: "image/svg+xml", buffer: Buffer.from(logo) });
  await submit(small, "#branding-form button[type=submit]");
  check(!(await small.isVisible(".field-error")), "the branding is stored");
  const visitor = await browser.newContext();
  const branded = await visitor.newPage();
  await branded.goto(`${BASE}/account`);
  check(await branded.isVisible("#brand-logo"), "the login page shows the logo");
  check((await branded.getAttribute("#brand-logo", "alt")) === "Example Co-op", "the logo is named by the organisation");
  const shown = await branded.$eval("#brand-logo", (img) => img.complete && img.naturalWidth > 0);
  check(shown, "the logo loads as its own resource");
  check((await branded.textContent(".lead")).includes("your Example Co-op account"), "the sign-in names the organisation");
  const accent = await branded.$eval("button[type=submit]", (b) => getComputedStyle(b).backgroundColor);
  check(accent === "rgb(11, 122, 62)", `the accent colour is applied (${accent})`);
  await snap(branded, "login-branded");
  await visitor.close();
  console.log("journey complete");
} finally {
  await browser.close();
  server.close();
}
