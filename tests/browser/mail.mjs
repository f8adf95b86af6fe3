// Drives Debian's Chromium through Tessera's mail journeys with a real SMTP server
// (a small one here, on SMTP_PORT): an invitation accepted; an open sign-up verified;
// a forgotten password reset, then a sign-in with the second factor that remembers
// the device; a sign-in link; an account deleted. Every page is screenshotted into
// $SHOTS.
//
// Environment: BASE (Tessera's issuer URL), SMTP_PORT, RP_PORT (this script's relying
// party, registered as client "demo" with CLIENT_SECRET), SHOTS, CHROMIUM.

import { chromium } from "playwright-core";
import { totp } from "./totp.mjs";
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { createServer as createTcpServer } from "node:net";
import { mkdirSync } from "node:fs";

const { BASE, SHOTS, CLIENT_SECRET } = process.env;
const SMTP_PORT = Number(process.env.SMTP_PORT);
const RP_PORT = Number(process.env.RP_PORT);
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
if (!BASE || !SHOTS || !SMTP_PORT || !RP_PORT || !CLIENT_SECRET) {
  throw new Error("BASE, SHOTS, SMTP_PORT, RP_PORT and CLIENT_SECRET are required");
}
mkdirSync(SHOTS, { recursive: true });

function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}

// --- A real SMTP server (RFC 5321: greeting, EHLO, MAIL, RCPT, DATA, QUIT). ---
const inbox = [];
const smtp = createTcpServer((sock) => {
  let buffer = "", data = null, to = [];
  sock.write("220 journey.test ESMTP\r\n");
  sock.on("data", (chunk) => {
    buffer += chunk.toString("utf8");
    let i;
    while ((i = buffer.indexOf("\r\n")) >= 0) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      if (data !== null) {
        if (line === ".") {
          inbox.push({ to, data: data.join("\n") });
          data = null;
          to = [];
          sock.write(`250 2.0.0 queued as journey-${inbox.length}\r\n`);
        } else {
          data.push(line.startsWith("..") ? line.slice(1) : line);
        }
        continue;
      }
      const verb = line.split(" ")[0].toUpperCase();
      if (verb === "EHLO") sock.write("250-journey.test\r\n250 8BITMIME\r\n");
      else if (verb === "RCPT") { to.push(line.slice(5)); sock.write("250 2.1.5 OK\r\n"); }
      else if (verb === "DATA") { data = []; sock.write("354 go ahead\r\n"); }
      else if (verb === "QUIT") { sock.end("221 bye\r\n"); }
      else sock.write("250 2.0.0 OK\r\n");
    }
  });
  sock.on("error", () => {});
});
await new Promise((ok) => smtp.listen(SMTP_PORT, "127.0.0.1", ok));

// The decoded text/plain part of a message (quoted-printable or base64).
function textOf(raw) {
  const parts = raw.split(/\n--/);
  for (const p of parts) {
    const split = p.indexOf("\n\n");
    const head = p.slice(0, split).toLowerCase();
    const body = p.slice(split + 2);
    if (!head.includes("content-type: text/plain")) continue;
    if (head.includes("content-transfer-encoding: base64")) {
      return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
    }
    if (head.includes("content-transfer-encoding: quoted-printable")) {
      return body.replace(/=\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
    }
    return body;
  }
  return raw;
}
// Waits for the n-th message to `addr` and returns its text.
async function mail(addr, n = 1) {
  for (let i = 0; i < 300; i++) {
    const got = inbox.filter((m) => m.to.some((t) => t.toLowerCase().includes(`<${addr}>`)));
    if (got.length >= n) return textOf(got[n - 1].data);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no mail number ${n} to ${addr}; inbox: ${inbox.map((m) => m.to).join(", ")}`);
}
function linkIn(text, path) {
  const found = text.split(/\s+/).find((w) => w.startsWith("http") && w.includes(path));
  check(found, `a ${path} link in: ${text}`);
  check(found.startsWith(BASE), `links come from the issuer (${found})`);
  return found;
}
function codeIn(text) {
  const m = text.match(/Your code:\s*(\d{6})/);
  check(m, `a code in: ${text}`);
  return m[1];
}


// --- A minimal relying party: /start (any extra query goes to /authorize), /cb. ---
const b64url = (buf) => buf.toString("base64url");
const pending = new Map();
const callback = `http://127.0.0.1:${RP_PORT}/cb`;
const rp = createServer(async (req, res) => {
  const url = new URL(req.url, `http://${req.headers.host}`);
  if (url.pathname === "/start") {
    const verifier = b64url(randomBytes(32));
    const state = b64url(randomBytes(16));
    pending.set(state, verifier);
    const q = new URLSearchParams({
      response_type: "code", client_id: "demo", redirect_uri: callback, scope: "openid profile email",
      state, nonce: b64url(randomBytes(16)),
      code_challenge: b64url(createHash("sha256").update(verifier).digest()), code_challenge_method: "S256",
    });
    for (const [k, v] of url.searchParams) q.set(k, v);
    res.writeHead(302, { location: `${BASE}/authorize?${q}` }).end();
    return;
  }
  if (url.pathname === "/cb") {
    const verifier = pending.get(url.searchParams.get("state"));
    const code = url.searchParams.get("code");
    if (!verifier || !code) { res.writeHead(400).end(`no code: ${url.search}`); return; }
    const token = await fetch(`${BASE.replace("//localhost:", "//127.0.0.1:")}/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: "Basic " + Buffer.from(`demo:${CLIENT_SECRET}`).toString("base64"),
      },
      body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: callback, code_verifier: verifier }),
    }).then((r) => r.json());
    const claims = JSON.parse(Buffer.from(token.id_token.split(".")[1], "base64url").toString());
    res.writeHead(200, { "content-type": "text/html" }).end(
      `<!doctype html><meta name=viewport content="width=device-width"><title>Demo app</title>` +
      `<h1>Demo app</h1><p>Signed in as <b id="who">${claims.preferred_username}</b></p>` +
      `<p>amr: <b id="amr">${claims.amr.join(" ")}</b> · email verified: <b id="verified">${claims.email_verified}</b></p>`);
    return;
  }
  res.writeHead(404).end();
});
await new Promise((ok) => rp.listen(RP_PORT, "127.0.0.1", ok));
console.log("listening");

// Tessera starts once this script listens; wait for it.
for (let i = 0; ; i++) {
  try { if ((await fetch(`${BASE.replace("//localhost:", "//127.0.0.1:")}/healthz`)).ok) break; } catch {}
  check(i < 300, "Tessera came up");
  await new Promise((r) => setTimeout(r, 100));
}

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
async function submit(page, selector) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}
async function signIn(page, username, password) {
  await page.fill("#username", username);
  await page.fill("#password", password);
  await submit(page, "button[type=submit]");
}
async function signOut(page) {
  await page.goto(`${BASE}/logout`);
  await submit(page, "button:has-text('Sign out')");
}
async function signedIn(page, who, what) {
  check((await page.textContent("#who")) === who, `${what}: the client received ${who} (${page.url()})`);
}

const MIA = { username: "mia", email: "mia@example.com", password: "the first passphrase 7" };
const NEW_PASSWORD = "the second passphrase 8";

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();

  const RP = `http://127.0.0.1:${RP_PORT}`;
  const NIA = { username: "nia", email: "nia@example.com", password: "a chosen passphrase 42" };

  // 1. The invitation the command line queued arrives; accepting it makes the account.
  await page.goto(linkIn(await mail(NIA.email), "/invite"));
  check((await page.inputValue("#username")) === NIA.username, "the username is prefilled from the address");
  await snap(page, "invite");
  await page.fill("#password", NIA.password);
  await page.fill("#confirm", NIA.password);
  await submit(page, "button:has-text('Create my account')");
  check((await page.textContent("#username")).trim() === NIA.username, "the account is ready");
  await snap(page, "invite-accepted");
  await page.goto(`${RP}/start`);
  await signIn(page, NIA.username, NIA.password);
  await signedIn(page, NIA.username, "the invited account");
  check((await page.textContent("#verified")) === "true", "the invitation proved the address");
  await snap(page, "invite-client-signed-in");
  await signOut(page);

  // 2. Open sign-up through prompt=create; the mailed link confirms the address and
  // leads back to the same sign-in.
  await page.goto(`${RP}/start?prompt=create`);
  check(await page.isVisible("#email"), "prompt=create opens the sign-up form");
  await snap(page, "signup");
  await page.fill("#username", "oli");
  await page.fill("#email", "oli@example.com");
  await page.fill("#name", "Oli Example");
  await page.fill("#password", "an own passphrase 9");
  await page.fill("#confirm", "an own passphrase 9");
  await submit(page, "button:has-text('Create account')");
  check(await page.isVisible("#signup-sent"), "check your mail");
  await snap(page, "signup-sent");
  await page.goto(linkIn(await mail("oli@example.com"), "/email/verify"));
  await snap(page, "verify");
  await submit(page, "#confirm");
  check(await page.isVisible("#verified"), "the address is confirmed");
  await snap(page, "verified");
  await submit(page, "#continue");
  check((await page.inputValue("#username")) === "oli", "back on the sign-in of the same request");
  await page.fill("#password", "an own passphrase 9");
  await submit(page, "button:has-text('Sign in')");
  await signedIn(page, "oli", "the signed-up account");
  check((await page.textContent("#verified")) === "true", "email_verified after the link");
  await snap(page, "signup-client-signed-in");
  await signOut(page);

  // 3. mia turns on an authenticator app, then forgets her password.
  await page.goto(`${BASE}/account`);
  await signIn(page, MIA.username, MIA.password);
  await submit(page, "#totp-setup");
  const secret = (await page.textContent("#totp-secret")).trim();
  await page.fill("#code", totp(secret, Date.now() / 1000));
  await submit(page, "button:has-text('Turn on')");
  const recovery = await page.$$eval("#recovery-codes code", (els) => els.map((e) => e.textContent));
  check((await mail(MIA.email, 1)).includes("authenticator app"), "mia is told of the new authenticator");
  await signOut(page);
  await page.goto(`${RP}/start`);
  await submit(page, "#forgot-link");
  await snap(page, "forgot");
  await page.fill("#who", MIA.email);
  await submit(page, "button:has-text('Email me a link')");
  check(await page.isVisible("#forgot-sent"), "the answer says nothing of the account");
  await snap(page, "forgot-sent");
  await page.goto(linkIn(await mail(MIA.email, 2), "/password/reset"));
  await snap(page, "reset");
  await page.fill("#password", NEW_PASSWORD);
  await page.fill("#confirm", NEW_PASSWORD);
  // The link proves the mailbox only: the authenticator app is asked too.
  check(await page.isVisible("input#code"), "the reset asks the authenticator app");
  await page.fill("#code", recovery[0]);
  await submit(page, "button:has-text('Set the new password')");
  check(await page.isVisible("#reset-done"), "the password is changed");
  await snap(page, "reset-done");
  check((await mail(MIA.email, 3)).includes("was reset"), "mia is told of the reset");

  // 4. The new password, then the second factor, remembering this device.
  await page.goto(`${RP}/start`);
  await signIn(page, MIA.username, NEW_PASSWORD);
  check(await page.isVisible("input#code"), "the second factor is still asked after a reset");
  await page.check("#remember");
  await snap(page, "mfa-remember");
  await page.fill("#code", totp(secret, Date.now() / 1000 + 30));
  await submit(page, "button:has-text('Verify')");
  await signedIn(page, MIA.username, "password and code after the reset");
  check((await page.textContent("#amr")) === "pwd otp mfa", "amr says two factors");
  await snap(page, "client-signed-in-mfa");
  await signOut(page);

  // 5. The remembered device skips the second factor.
  await page.goto(`${RP}/start`);
  await signIn(page, MIA.username, NEW_PASSWORD);
  await signedIn(page, MIA.username, "a remembered device");
  check((await page.textContent("#amr")) === "pwd", "amr says the password alone");
  await snap(page, "client-signed-in-remembered");
  await page.goto(`${BASE}/account`);
  check((await page.locator("#trusted-devices tbody tr").count()) === 1, "the account page lists the trusted device");
  await snap(page, "account-trusted-devices");
  await signOut(page);

  // 6. A sign-in link and code by mail, opened in this browser.
  await page.goto(`${RP}/start`);
  await submit(page, "#email-link");
  await snap(page, "signin-link");
  await page.fill("#who", MIA.username);
  await submit(page, "button:has-text('Email me a link')");
  check(await page.isVisible("#signin-link-sent"), "the code form waits for the mail");
  await snap(page, "signin-link-sent");
  const linkMail = await mail(MIA.email, 4);
  check(codeIn(linkMail).length === 6, "the mail holds a code too");
  await page.goto(linkIn(linkMail, "/login/email/link"));
  check((await page.textContent("#signin-as")).trim() === MIA.username, "the link says who signs in");
  await snap(page, "signin-link-confirm");
  await submit(page, "#signin-confirm");
  await signedIn(page, MIA.username, "the sign-in link");
  await snap(page, "client-signed-in-link");
  await signOut(page);

  // 7. nia deletes her account, and can no longer sign in.
  await page.goto(`${BASE}/account`);
  await signIn(page, NIA.username, NIA.password);
  await page.fill("#delete-password", NIA.password);
  await snap(page, "account-delete");
  await submit(page, "button:has-text('Delete my account')");
  check(await page.isVisible("#deleted"), "the account is deleted");
  await snap(page, "account-deleted");
  await page.goto(`${RP}/start`);
  await signIn(page, NIA.username, NIA.password);
  check(await page.isVisible("#login-error"), "a deleted account does not sign in");
  await snap(page, "deleted-cannot-sign-in");
  console.log("mail journey complete");
} finally {
  await browser.close();
  rp.close();
  smtp.close();
}
