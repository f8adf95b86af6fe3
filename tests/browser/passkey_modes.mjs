// Username-first sign-in (`--passkey-mode username-first`) in Chromium with its virtual
// authenticator, on Tessera's own account page: the username alone, then the password
// for an account without a passkey; a passkey added; then the username, and the
// passkey asked for first, signing in with no password. Screenshots go to $SHOTS.
//
// Environment: BASE (Tessera's issuer URL), SHOTS, CHROMIUM (default /usr/bin/chromium).

import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const BASE = process.env.BASE;
const SHOTS = process.env.SHOTS;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
if (!BASE || !SHOTS) throw new Error("BASE and SHOTS are required");
mkdirSync(SHOTS, { recursive: true });
const USER = { username: "nora", password: "nora's long passphrase" };

function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}
let shot = 0;
async function snap(page, name) {
  shot += 1;
  await page.screenshot({ path: `${SHOTS}/${String(shot).padStart(2, "0")}-${name}.png`, fullPage: true });
}
async function submit(page, selector) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
});
const context = await browser.newContext();
const page = await context.newPage();
// The autofill's conditional request would sign in on the username page itself (the
// journey tests that); here the steps are walked one by one.
await page.addInitScript(() => {
  if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);
});

// 1. No passkey yet: the username, then the password.
await page.goto(`${BASE}/account`);
check(await page.isVisible("#username"), "the username is asked for");
check(!(await page.isVisible("#password")), "the password is not asked for yet");
await snap(page, "username-step");
await page.fill("#username", USER.username);
await submit(page, "#username-next");
check((await page.textContent("#signing-in-as")).includes(USER.username), "the step names the account");
check(!(await page.isVisible("#or-password")), "no passkey is offered first");
await snap(page, "password-step");
await page.fill("#password", USER.password);
await submit(page, "button[type=submit]:has-text('Sign in')");
check(page.url().startsWith(`${BASE}/account`), `signed in to the account page (${page.url()})`);

// 2. A passkey (the virtual authenticator stands in for the phone).
const cdp = await context.newCDPSession(page);
await cdp.send("WebAuthn.enable");
await cdp.send("WebAuthn.addVirtualAuthenticator", { options: {
  protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true,
  isUserVerified: true, automaticPresenceSimulation: true } });
await page.fill("#passkey-name", "Phone");
await Promise.all([page.waitForURL(/done=passkey/), page.click("#passkey-add")]);
await page.goto(`${BASE}/logout`);
await submit(page, "form[action='/logout/confirm'] button[type=submit]");

// 3. The username, then the passkey first: picked, and no password is typed.
await page.goto(`${BASE}/account`);
await page.fill("#username", USER.username);
await submit(page, "#username-next");
check(await page.isVisible("#or-password"), "the password stays the alternative");
check(await page.isVisible("#passkey-login"), "the passkey is asked for");
const first = await page.evaluate(() => {
  const key = document.getElementById("passkey-login");
  const pwd = document.getElementById("password");
  return !key.classList.contains("secondary") &&
    (key.compareDocumentPosition(pwd) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
});
check(first, "the passkey is the first and main choice");
await snap(page, "passkey-step");
await Promise.all([page.waitForURL(`${BASE}/account**`), page.click("#passkey-login")]);
check((await page.textContent("body")).includes(USER.username), "signed in with the passkey alone");
await snap(page, "signed-in-with-passkey");

await browser.close();
console.log("passkey modes complete");
