// Passkeys on the login, account, confirmation and mailed-link pages: progressive
// enhancement. Without JavaScript or WebAuthn the buttons stay hidden and password
// sign-in works as before.
"use strict";
(function () {
  if (!window.PublicKeyCredential || !navigator.credentials) return;
  const enc = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const dec = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const fail = (message) => {
    const box = document.getElementById("passkey-error");
    if (box) { box.textContent = message; box.hidden = false; }
  };
  // The page's words (data-* on the error box, in the page's language), else English.
  const said = (key, english) => {
    const box = document.getElementById("passkey-error");
    return (box && box.dataset[key]) || english;
  };
  const problem = async (resp) => {
    try { return (await resp.json()).error_description || said("failed", "The passkey could not be used."); }
    catch (_) { return said("failed", "The passkey could not be used."); }
  };

  const login = document.getElementById("passkey-login");
  if (login) {
    const form = document.getElementById("passkey-form");
    // The challenge for this page's sign-in; `quiet` for the autofill's, which must not
    // greet a person with an error they did not cause.
    const options = async (quiet) => {
      const body = new URLSearchParams({ request_id: form.request_id.value, csrf: form.csrf.value });
      const resp = await fetch("/login/passkey/options", { method: "POST", body });
      if (!resp.ok) { if (!quiet) fail(await problem(resp)); return null; }
      const o = await resp.json();
      return { challenge: dec(o.challenge), rpId: o.rpId, timeout: o.timeout,
        userVerification: o.userVerification, allowCredentials: [] };
    };
    const send = (cred) => {
      form.credential_id.value = enc(cred.rawId);
      form.client_data.value = enc(cred.response.clientDataJSON);
      form.authenticator_data.value = enc(cred.response.authenticatorData);
      form.signature.value = enc(cred.response.signature);
      form.submit();
    };
    // Conditional UI (WebAuthn §5.1.4.1, mediation "conditional"): the browser offers
    // the account's passkeys in the username field's autofill, with no dialog until
    // one is picked; the button below asks at once and cancels this first.
    let waiting = null;
    const username = document.querySelector("input[autocomplete~=webauthn]");
    if (username && PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then(async (available) => {
        if (!available) return;
        const publicKey = await options(true);
        if (!publicKey) return;
        waiting = new AbortController();
        let cred;
        try {
          cred = await navigator.credentials.get({ mediation: "conditional", signal: waiting.signal, publicKey });
        } catch (_) { return; }
        if (cred) send(cred);
      }).catch(() => {});
    }
    login.hidden = false;
    login.addEventListener("click", async () => {
      if (waiting) { waiting.abort(); waiting = null; }
      const publicKey = await options(false);
      if (!publicKey) return;
      let cred;
      try { cred = await navigator.credentials.get({ publicKey }); }
      catch (_) { return fail(said("unused", "No passkey was used. Try again, or sign in with your password.")); }
      send(cred);
    });
  }

  // A passkey made through a mailed link (an invitation, a reset, a sign-up's
  // confirmation): the form's fields ask for the options, the new credential goes
  // back in the same form.
  const enrol = document.getElementById("passkey-enrol");
  if (enrol) {
    const form = document.getElementById("passkey-enrol-form");
    enrol.hidden = false;
    enrol.addEventListener("click", async () => {
      const copy = form.dataset.copy;
      if (copy) form.elements[copy].value = document.getElementById(copy).value;
      const resp = await fetch(form.dataset.options, { method: "POST", body: new URLSearchParams(new FormData(form)) });
      if (!resp.ok) return fail(await problem(resp));
      const o = await resp.json();
      o.challenge = dec(o.challenge);
      o.user.id = dec(o.user.id);
      o.excludeCredentials = o.excludeCredentials.map((c) => ({ type: c.type, id: dec(c.id) }));
      let cred;
      try { cred = await navigator.credentials.create({ publicKey: o }); }
      catch (_) { return fail(said("uncreated", "No passkey was created.")); }
      form.client_data.value = enc(cred.response.clientDataJSON);
      form.attestation_object.value = enc(cred.response.attestationObject);
      form.submit();
    });
  }

  // Confirming who one is with one of the account's own passkeys.
  const confirm = document.getElementById("passkey-confirm");
  if (confirm) {
    const form = document.getElementById("passkey-confirm-form");
    confirm.hidden = false;
    confirm.addEventListener("click", async () => {
      const resp = await fetch("/account/confirm/passkey/options",
        { method: "POST", headers: { "X-CSRF-Token": form.dataset.csrf } });
      if (!resp.ok) return fail(await problem(resp));
      const o = await resp.json();
      const publicKey = { challenge: dec(o.challenge), rpId: o.rpId, timeout: o.timeout,
        userVerification: o.userVerification,
        allowCredentials: o.allowCredentials.map((c) => ({ type: c.type, id: dec(c.id) })) };
      let cred;
      try { cred = await navigator.credentials.get({ publicKey }); }
      catch (_) { return fail(said("unused", "No passkey was used.")); }
      form.credential_id.value = enc(cred.rawId);
      form.client_data.value = enc(cred.response.clientDataJSON);
      form.authenticator_data.value = enc(cred.response.authenticatorData);
      form.signature.value = enc(cred.response.signature);
      form.submit();
    });
  }

  const add = document.getElementById("passkey-add");
  if (add) {
    add.hidden = false;
    add.addEventListener("click", async () => {
      const csrf = add.dataset.csrf;
      const name = document.getElementById("passkey-name").value;
      const resp = await fetch("/account/passkeys/options", { method: "POST", headers: { "X-CSRF-Token": csrf } });
      if (resp.status === 403) {
        // A credential change needs a recent password: confirm it, then come back.
        const body = await resp.clone().json().catch(() => ({}));
        if (body.confirm) { window.location.assign(body.confirm); return; }
      }
      if (!resp.ok) return fail(await problem(resp));
      const o = await resp.json();
      o.challenge = dec(o.challenge);
      o.user.id = dec(o.user.id);
      o.excludeCredentials = o.excludeCredentials.map((c) => ({ type: c.type, id: dec(c.id) }));
      let cred;
      try { cred = await navigator.credentials.create({ publicKey: o }); }
      catch (_) { return fail(said("uncreated", "No passkey was created.")); }
      const saved = await fetch("/account/passkeys", {
        method: "POST",
        headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" },
        body: JSON.stringify({
          name, client_data: enc(cred.response.clientDataJSON),
          attestation_object: enc(cred.response.attestationObject) }),
      });
      if (!saved.ok) return fail(await problem(saved));
      location.assign("/account?done=passkey");
    });
  }
})();
