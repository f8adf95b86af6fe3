// Runs a real oidc-client-ts public client (tests/browser/spa/, served from its own
// port, so every call to Tessera is cross-origin) in Debian's Chromium: sign-in with
// the authorization code flow and PKCE → renewal with the refresh token (a CORS POST
// to /token) → renewal through a hidden prompt=none iframe → sign-out at the
// end_session_endpoint with id_token_hint → a prompt=none attempt that must now fail
// with login_required, and the revoked refresh token refused.
//
// Environment: BASE (Tessera's issuer URL, on host localhost), SPA_PORT (port for the
// SPA, also on localhost), CLIENT_ID (a public client registered for the SPA's pages),
// USERNAME and PASSWORD (a user), SHOTS (directory for PNGs), CHROMIUM (browser path,
// default /usr/bin/chromium).

import { chromium } from "playwright-core";
import { createServer } from "node:http";
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";

const { BASE, SPA_PORT, CLIENT_ID, USERNAME, PASSWORD, SHOTS } = process.env;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
for (const [name, value] of Object.entries({ BASE, SPA_PORT, CLIENT_ID, USERNAME, PASSWORD, SHOTS })) {
  if (!value) {
    console.error(`${name} is required`);
    process.exit(2);
  }
}
mkdirSync(SHOTS, { recursive: true });
const SPA = `http://localhost:${SPA_PORT}`;

// The whole run has a deadline, whatever hangs.
const deadline = setTimeout(() => {
  console.error("FAILED: the SPA journey did not finish within 85 s");
  process.exit(1);
}, 85_000);

function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}
function within(ms, promise, what) {
  let timer;
  const late = new Promise((_, fail) => { timer = setTimeout(() => fail(new Error(`${what}: no result within ${ms / 1000} s`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
const tail = (token) => (token ? `…${token.slice(-8)}` : "none");

// The SPA's static files, the library's browser bundle, and its settings.
const pages = new URL("./spa/", import.meta.url);
const bundle = new URL("./node_modules/oidc-client-ts/dist/browser/oidc-client-ts.min.js", import.meta.url);
if (!existsSync(bundle)) {
  console.error("oidc-client-ts is missing: run `npm ci --prefix tests/browser`");
  process.exit(2);
}
const config = `window.SPA_CONFIG = ${JSON.stringify({ authority: BASE, client_id: CLIENT_ID })};\n`;
const types = { html: "text/html; charset=utf-8", js: "text/javascript; charset=utf-8" };
const server = createServer((req, res) => {
  const path = new URL(req.url, SPA).pathname;
  const name = path === "/" ? "index.html" : path.slice(1);
  let body;
  if (name === "config.js") body = config;
  else if (name === "oidc-client-ts.min.js") body = readFileSync(bundle);
  else if (readdirSync(pages).includes(name)) body = readFileSync(new URL(name, pages));
  else {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": types[name.split(".").pop()], "cache-control": "no-store" }).end(body);
});
await new Promise((ok, fail) => server.once("error", fail).listen(Number(SPA_PORT), "127.0.0.1", ok));

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});

// Every exchange with Tessera, from the page and its iframes, as the browser saw it.
const traffic = [];
function record(req, status, res, failure) {
  if (!req.url().startsWith(`${BASE}/`)) return;
  const url = new URL(req.url());
  traffic.push({
    method: req.method(), path: url.pathname, query: url.searchParams, status, failure,
    form: new URLSearchParams(req.postData() ?? ""),
    allowOrigin: res ? res.headers()["access-control-allow-origin"] ?? null : null,
  });
}
// The endpoints the SPA's scripts call across origins: their answers need CORS headers.
const fetched = new Set(["/.well-known/openid-configuration", "/jwks", "/token", "/userinfo", "/revoke"]);
function describe(t) {
  const detail = [["prompt", t.query], ["grant_type", t.form], ["token_type_hint", t.form]]
    .filter(([name, params]) => params.has(name))
    .map(([name, params]) => ` ${name}=${params.get(name)}`).join("");
  const cors = fetched.has(t.path) ? ` allow-origin=${t.allowOrigin ?? "(none)"}` : "";
  return `${t.method} ${t.path}${detail} → ${t.failure ?? t.status}${cors}`;
}
const browserErrors = [];

let number = 0;
let since = 0;
let shots = [];
async function step(name, run) {
  number += 1;
  since = traffic.length;
  shots = [];
  const exchanges = () => [...traffic.slice(since).map(describe), ...shots].map((l) => `    ${l}`).join("\n");
  let note;
  try {
    note = await within(25_000, run(), name);
  } catch (e) {
    console.log(`step ${number} ${name}: FAILED\n${exchanges()}`);
    throw e;
  }
  console.log(`step ${number} ${name}: ok${note ? ` (${note})` : ""}\n${exchanges()}`);
}
const seen = (pred) => traffic.slice(since).filter(pred);

let shot = 0;
async function snap(page, name) {
  shot += 1;
  const file = `${SHOTS}/${String(shot).padStart(2, "0")}-${name}.png`;
  await page.screenshot({ path: file, fullPage: true });
  shots.push(`screenshot ${file}`);
}

// Waits for the browser to arrive where `want` says; if it doesn't, says where it is.
async function arrive(page, want, what) {
  try {
    await page.waitForURL(want, { timeout: 15_000 });
  } catch {
    const text = await page.locator("h1, [role=alert]").allTextContents().catch(() => []);
    throw new Error(`${what}: stuck at ${page.url()} ${JSON.stringify(text.map((s) => s.trim()).filter(Boolean))}`);
  }
}
const home = (url) => url.origin === SPA && url.pathname === "/index.html";

try {
  const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.setDefaultNavigationTimeout(15_000);
  page.on("response", (res) => record(res.request(), res.status(), res));
  page.on("requestfailed", (req) => record(req, 0, null, req.failure()?.errorText ?? "failed"));
  page.on("console", (m) => { if (m.type() === "error") browserErrors.push(m.text()); });
  page.on("pageerror", (e) => browserErrors.push(`page error: ${e.message}`));
  const call = (fn, arg) => within(20_000, page.evaluate(fn, arg), "the SPA's call");

  await step("sign-in (authorization code + PKCE via signinRedirect)", async () => {
    await page.goto(`${SPA}/index.html`);
    await page.waitForSelector("body[data-ready]");
    await page.click("#sign-in");
    await arrive(page, (u) => u.href.startsWith(`${BASE}/`), "signinRedirect");
    await page.waitForSelector("#username");
    await snap(page, "spa-login");
    await page.fill("#username", USERNAME);
    await page.fill("#password", PASSWORD);
    await page.click("button[type=submit]");
    await arrive(page, home, "the code exchange at callback.html");
    await page.waitForSelector("#who");
    check((await page.textContent("#who")) === USERNAME, `signed in as ${USERNAME}`);
    const user = await call(() => spa.user());
    check(user.refresh_token, "the public client received a refresh token");
    const authorize = seen((t) => t.path === "/authorize")[0];
    check(authorize?.query.get("code_challenge_method") === "S256", "the request carried an S256 code challenge");
    const exchange = seen((t) => t.path === "/token" && t.form.get("grant_type") === "authorization_code");
    check(exchange.length === 1 && exchange[0].status === 200, "one code exchange at /token, answered 200");
    check(exchange[0].form.get("code_verifier"), "the code exchange sent the PKCE verifier");
    check(seen((t) => t.path === "/userinfo" && t.status === 200).length === 1, "userinfo answered 200");
    await snap(page, "spa-signed-in");
    return `sub ${user.sub}, access token ${tail(user.access_token)}, refresh token ${tail(user.refresh_token)}`;
  });

  await step("renew with the refresh token (signinSilent → POST /token)", async () => {
    const before = await call(() => spa.user());
    const result = await call(() => spa.renew());
    check(result.user, `signinSilent failed: ${JSON.stringify(result)}`);
    check(result.user.sub === before.sub, "the same subject");
    check(result.user.access_token !== before.access_token, "a new access token");
    const refresh = seen((t) => t.path === "/token" && t.form.get("grant_type") === "refresh_token");
    check(refresh.length === 1 && refresh[0].status === 200, "one refresh at /token, answered 200");
    check(refresh[0].form.get("refresh_token") === before.refresh_token, "it sent the stored refresh token");
    check(seen((t) => t.path === "/authorize").length === 0, "no iframe was used");
    const rotated = result.user.refresh_token && result.user.refresh_token !== before.refresh_token;
    return `access token ${tail(result.user.access_token)}, refresh token ${rotated ? "rotated" : "kept"}`;
  });

  await step("renew through the prompt=none iframe (no refresh token)", async () => {
    await call(() => spa.dropRefreshToken());
    check((await call(() => spa.user())).refresh_token === null, "the stored user has no refresh token");
    const before = await call(() => spa.user());
    const result = await call(() => spa.renew());
    check(result.user, `signinSilent failed: ${JSON.stringify(result)}`);
    check(result.user.sub === before.sub, "the same subject");
    check(result.user.access_token !== before.access_token, "a new access token");
    const silent = seen((t) => t.path === "/authorize" && t.query.get("prompt") === "none");
    check(silent.length === 1, "one prompt=none authorization request from the iframe");
    check(silent[0].query.get("redirect_uri") === `${SPA}/silent.html`, "it returned to silent.html");
    const exchange = seen((t) => t.path === "/token" && t.form.get("grant_type") === "authorization_code");
    check(exchange.length === 1 && exchange[0].status === 200, "the iframe's code was exchanged at /token");
    return `access token ${tail(result.user.access_token)}, refresh token ${tail(result.user.refresh_token)}`;
  });

  let saved;
  await step("sign-out (signoutRedirect with id_token_hint and post_logout_redirect_uri)", async () => {
    saved = await call(() => spa.saved());
    await page.click("#sign-out");
    await arrive(page, (u) => home(u) && u.searchParams.has("state"), "the return from the end_session_endpoint");
    await page.waitForSelector("body[data-ready]");
    const back = await page.evaluate(() => document.body.dataset.signedOut ?? document.getElementById("error").textContent);
    check(back === "state-matched", `signoutCallback accepted the returned state (${back})`);
    check(await page.isVisible("#signed-out"), "the SPA shows it is signed out");
    const logout = seen((t) => t.path === "/logout");
    check(logout.length === 1, "one request to the end_session_endpoint");
    check(logout[0].query.get("id_token_hint") && logout[0].query.get("post_logout_redirect_uri") === `${SPA}/index.html`,
      "it carried id_token_hint and post_logout_redirect_uri");
    check(logout[0].status === 302, `no confirmation page with a matching id_token_hint (status ${logout[0].status})`);
    const revoked = seen((t) => t.path === "/revoke" && t.status === 200).map((t) => t.form.get("token_type_hint"));
    check(revoked.includes("access_token") && revoked.includes("refresh_token"), `both tokens revoked (${revoked})`);
    await snap(page, "spa-signed-out");
  });

  await step("prompt=none after sign-out fails with login_required", async () => {
    const result = await call(() => spa.renew());
    check(!result.user, "no user came back");
    check(result.error === "login_required", `the error is login_required (${JSON.stringify(result)})`);
    check(seen((t) => t.path === "/authorize" && t.query.get("prompt") === "none").length === 1, "it went through the iframe");
  });

  await step("the refresh token revoked at sign-out is refused", async () => {
    await call((text) => spa.restore(text), saved);
    const result = await call(() => spa.renew());
    await call(() => spa.forget());
    check(!result.user, "no user came back");
    check(result.error === "invalid_grant", `the error is invalid_grant (${JSON.stringify(result)})`);
  });

  console.log("spa journey complete");
} catch (e) {
  console.log(`FAILED: ${e.message}`);
  for (const line of browserErrors) console.log(`    browser: ${line}`);
  process.exitCode = 1;
} finally {
  clearTimeout(deadline);
  await browser.close();
  server.close();
}
