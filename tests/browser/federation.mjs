// Drives Debian's Chromium through "Sign in with <upstream>": a relying party here
// sends the browser to the downstream Tessera (code flow with PKCE, RFC 7636), whose
// login page offers "Sign in with Company SSO"; that goes to the upstream Tessera
// (another host name, so the browser keeps the two sites' cookies apart), where the
// user signs in with a password, and back through the downstream's callback to the
// relying party, which redeems the code (client_secret_basic) and shows the ID token.
// The account, created just in time, then shows the provider under "Linked accounts"
// and has no password. Every page is screenshotted into $SHOTS.
//
// Environment: DOWN (the downstream's issuer), UP (the upstream's issuer), RP_PORT
// (this script's relying party, registered at DOWN as CLIENT_ID with CLIENT_SECRET and
// the redirect URI http://localhost:RP_PORT/callback), USERNAME and PASSWORD (the
// user at UP; NAME, when set, is that user's name, which the new account takes over),
// SHOTS, CHROMIUM.

import { chromium } from "playwright-core";
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { mkdirSync } from "node:fs";

const { DOWN, UP, CLIENT_ID, CLIENT_SECRET, USERNAME, PASSWORD, NAME, SHOTS } = process.env;
const RP_PORT = Number(process.env.RP_PORT);
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
if (!DOWN || !UP || !RP_PORT || !CLIENT_ID || !CLIENT_SECRET || !USERNAME || !PASSWORD || !SHOTS) {
  throw new Error("DOWN, UP, RP_PORT, CLIENT_ID, CLIENT_SECRET, USERNAME, PASSWORD and SHOTS are required");
}
mkdirSync(SHOTS, { recursive: true });

function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}

// --- A minimal relying party: /start sends the browser to DOWN, /callback redeems. ---
const b64url = (buf) => buf.toString("base64url");
const pending = new Map();
const rpBase = `http://localhost:${RP_PORT}`;
const callback = `${rpBase}/callback`;
const escape = (s) => String(s).replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
const rp = createServer(async (req, res) => {
  const url = new URL(req.url, `http://${req.headers.host}`);
  try {
    if (url.pathname === "/start") {
      const verifier = b64url(randomBytes(32));
      const state = b64url(randomBytes(16));
      const nonce = b64url(randomBytes(16));
      pending.set(state, { verifier, nonce });
      const q = new URLSearchParams({
        response_type: "code", client_id: CLIENT_ID, redirect_uri: callback, scope: "openid profile email",
        state, nonce,
        code_challenge: b64url(createHash("sha256").update(verifier).digest()), code_challenge_method: "S256",
      });
      res.writeHead(302, { location: `${DOWN}/authorize?${q}` }).end();
      return;
    }
    if (url.pathname === "/callback") {
      const started = pending.get(url.searchParams.get("state"));
      pending.delete(url.searchParams.get("state"));
      const code = url.searchParams.get("code");
      if (!started || !code) { res.writeHead(400).end(`no code: ${url.search}`); return; }
      // The back channel goes to the address itself (Node may try ::1 for localhost).
      const resp = await fetch(`${DOWN.replace("//localhost:", "//127.0.0.1:")}/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: "Basic " + Buffer.from(`${encodeURIComponent(CLIENT_ID)}:${encodeURIComponent(CLIENT_SECRET)}`).toString("base64"),
        },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: callback, code_verifier: started.verifier }),
      });
      const token = await resp.json();
      if (!resp.ok || !token.id_token) { res.writeHead(502).end(`token endpoint: ${resp.status} ${JSON.stringify(token)}`); return; }
      const claims = JSON.parse(Buffer.from(token.id_token.split(".")[1], "base64url").toString());
      res.writeHead(200, { "content-type": "text/html" }).end(
        `<!doctype html><meta name=viewport content="width=device-width"><title>Demo app</title>` +
        `<h1>Demo app</h1><p>Signed in as <b id="who">${escape(claims.preferred_username)}</b></p>` +
        `<p>iss: <b id="iss">${escape(claims.iss)}</b> · nonce ok: <b id="nonce">${claims.nonce === started.nonce}</b></p>` +
        `<p>amr: <b id="amr">${escape((claims.amr || []).join(" "))}</b></p>`);
      return;
    }
    res.writeHead(404).end();
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
});
await new Promise((ok) => rp.listen(RP_PORT, "127.0.0.1", ok));

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
// Clicks and waits for the page the click leads to (through any redirects).
async function submit(page, selector) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}
const hostOf = (u) => new URL(u).host;

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  // A missing element fails the journey quickly instead of after half a minute.
  page.setDefaultTimeout(10000);

  // 1. The relying party sends the browser to the downstream's login page.
  await page.goto(`${rpBase}/start`);
  check(hostOf(page.url()) === hostOf(DOWN), `on the downstream's login page (${page.url()})`);
  check(await page.isVisible("#upstream-up"), "the login page offers the upstream");
  const label = (await page.textContent("#upstream-up")).trim();
  check(label === "Sign in with Company SSO", `the button names the provider (${label})`);
  await snap(page, "downstream-login");

  // 2. The button goes to the upstream's own login page.
  await submit(page, "#upstream-up");
  check(hostOf(page.url()) === hostOf(UP), `on the upstream's login page (${page.url()})`);
  check(await page.isVisible("#username") && await page.isVisible("#password"), "the upstream asks for a password");
  check(!(await page.isVisible("#upstream-up")), "the upstream's page is its own, without the downstream's button");
  await snap(page, "upstream-login");

  // 3. Signs in there; the upstream redirects to the downstream's callback, which
  // redirects to the relying party with a code.
  await page.fill("#username", USERNAME);
  await page.fill("#password", PASSWORD);
  await Promise.all([page.waitForURL(`${callback}**`, { waitUntil: "load" }), page.click("button[type=submit]")]);
  check(await page.isVisible("#who"), `the relying party's page (${page.url()}): ${await page.textContent("body")}`);
  const who = await page.textContent("#who");
  check(who === USERNAME, `the relying party received ${USERNAME} (${who})`);
  check((await page.textContent("#iss")) === DOWN, "the ID token comes from the downstream");
  check((await page.textContent("#nonce")) === "true", "the nonce came back");
  const amr = (await page.textContent("#amr")).split(" ");
  check(amr.includes("fed"), `amr says federated (${amr.join(" ")})`);
  check(amr.includes("pwd"), `amr keeps the upstream's password (${amr.join(" ")})`);
  await snap(page, "client-signed-in");
  console.log(`signed in as ${who}, amr: ${amr.join(" ")}`);

  // 4. The browser now has a downstream session: the account page shows the link,
  // and no password for an account made on first sign-in.
  await page.goto(`${DOWN}/account`);
  check(page.url().startsWith(`${DOWN}/account`), `the account page, no sign-in asked (${page.url()})`);
  check(await page.isVisible("#linked-accounts"), "a Linked accounts section");
  const row = (await page.textContent("#linked-accounts #link-up")).replace(/\s+/g, " ");
  check(row.includes("Company SSO"), `Company SSO listed (${row})`);
  check(row.includes("linked") && !row.includes("not linked"), `Company SSO linked (${row})`);
  check(await page.isVisible("#unlink-up"), "an Unlink button for it");
  check(!(await page.isVisible("#link-up-button")), "no Link button for it");
  if (NAME) check((await page.inputValue("#name")) === NAME, `the upstream's name taken over (${await page.inputValue("#name")})`);
  check(await page.isVisible("#no-password"), "the account has no password");
  check(!(await page.isVisible("#current")), "no change-password form without a password");
  await snap(page, "account-linked");

  console.log("federation journey: ok");
} finally {
  await browser.close();
  rp.close();
}
