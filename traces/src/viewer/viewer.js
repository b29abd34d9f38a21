// locklab trace viewer: steps through the states recorded in the trace.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ll-trace").textContent);
  var last = data.steps.length - 1;
  var current = 0;
  var slider = document.getElementById("ll-slider");
  var rows = {};
  Array.prototype.forEach.call(document.querySelectorAll(".ll-row"), function (r) {
    rows[r.getAttribute("data-step")] = r;
    r.addEventListener("click", function () { go(Number(r.getAttribute("data-step"))); });
  });
  var story = document.querySelectorAll(".story li[data-step]");
  Array.prototype.forEach.call(story, function (li) {
    li.addEventListener("click", function () { go(Number(li.getAttribute("data-step"))); });
  });

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function table(id, head, body) {
    var t = document.getElementById(id);
    t.textContent = "";
    var tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", h)); });
    t.appendChild(tr);
    body.forEach(function (cells) {
      var row = el("tr");
      cells.forEach(function (c) { row.appendChild(el("td", c.text, c.cls)); });
      t.appendChild(row);
    });
  }
  // Times are milliseconds; shown like the Rust side's time::show_ms:
  // µs under 1 ms, ms under 1 s, s above, six significant digits at most.
  function showMs(ms) {
    if (ms === null || ms === undefined || !isFinite(ms)) { return "?"; }
    if (ms === 0) { return "0 s"; }
    var sign = ms < 0 ? "-" : "";
    var a = Math.abs(ms);
    var p = Math.floor(Math.log10(a));
    var scale = Math.pow(10, 5 - p);
    a = Math.round(a * scale) / scale;
    var v, unit;
    if (a < 1) { v = a * 1000; unit = "µs"; } else if (a < 1000) { v = a; unit = "ms"; } else { v = a / 1000; unit = "s"; }
    var whole = v >= 1 ? Math.floor(Math.log10(v)) + 1 : 1;
    var txt = v.toFixed(Math.max(0, Math.min(9, 6 - whole)));
    if (txt.indexOf(".") >= 0) { txt = txt.replace(/0+$/, "").replace(/\.$/, ""); }
    return sign + txt + " " + unit;
  }
  function offset(o) { return o === 0 ? "0" : (o > 0 ? "+" + showMs(o) : showMs(o)); }
  function ttl(e) {
    if (e.ttl === null) { return "no expiry"; }
    return e.expired || e.ttl < 0 ? "expired (" + showMs(-e.ttl) + " ago)" : showMs(e.ttl) + " left";
  }

  function show(k) {
    var step = data.steps[k];
    var prev = k > 0 ? data.steps[k - 1] : null;
    var s = step.state;
    slider.value = String(k);
    document.getElementById("ll-position").textContent = "step " + k + " of " + last + " · t=" + showMs(s.time) +
      (prev && s.time > prev.state.time ? " (+" + showMs(s.time - prev.state.time) + ")" : "");
    var inv = document.getElementById("ll-invariant");
    var broken = step.violations.indexOf(data.invariant) >= 0;
    inv.className = broken ? "broken" : "holds";
    inv.textContent = data.invariant + (broken ? ": BROKEN — " + data.violation : ": holds so far");
    var others = step.violations.filter(function (v) { return v !== data.invariant; });
    if (others.length) { inv.textContent += " (also broken: " + others.join(", ") + ")"; }
    var cap = document.getElementById("ll-caption");
    cap.textContent = k === 0 ? "initial state" : "step " + k + " (" + step.actor + "): " + step.caption;
    cap.className = step.fault ? "fault" : "";

    table("ll-clients", ["client", "phase", "believes it holds", "lock service holds for it", "paused", "clock"],
      s.clients.map(function (c, i) {
        var b = step.beliefs[i];
        var was = prev ? prev.state.clients[i] : null;
        var changed = was && (was.phase !== c.phase || was.holds !== c.holds);
        return [
          { text: c.id + (c.alive ? "" : " (crashed)") },
          { text: c.phase + (c.watchdog ? " · watchdog: " + c.watchdog : ""), cls: changed ? "changed" : "" },
          { text: c.holds ? "yes" + (c.believed_lease !== null ? " (lease " + showMs(c.believed_lease) + " left by its clock)" : "") + (c.token !== null ? " · token " + c.token : "") : "no", cls: c.holds ? (b.gap ? "gap" : "yes") : "" },
          { text: b.service + (b.gap ? " — its key is gone" : ""), cls: b.gap ? "gap" : "" },
          { text: c.paused === null ? "" : "paused for " + showMs(c.paused) },
          { text: offset(c.clock_offset), cls: c.clock_offset !== 0 ? "off" : "" }
        ];
      }));

    table("ll-servers", ["server", "status", "clock", "keys (owner, time to live)"],
      s.servers.map(function (v, i) {
        var keys = v.entries.map(function (e) {
          return e.key + " = " + e.value + (e.owner ? " (" + e.owner + ")" : "") + " · " + ttl(e);
        }).join("; ");
        if (v.unreplicated.length) { keys += (keys ? "; " : "") + "not yet replicated: " + v.unreplicated.join(", "); }
        var was = prev ? prev.state.servers[i] : null;
        var changed = was && JSON.stringify(was.entries.map(function (e) { return [e.value, e.expired]; })) !==
          JSON.stringify(v.entries.map(function (e) { return [e.value, e.expired]; }));
        return [
          { text: v.id + " (" + v.role + ")" },
          { text: v.status, cls: v.status === "up" ? "" : "off" },
          { text: offset(v.clock_offset), cls: v.clock_offset !== 0 ? "off" : "" },
          { text: keys || "—", cls: changed ? "changed" : "" }
        ];
      }));

    var r = s.resource;
    var res = document.getElementById("ll-resource");
    res.textContent = "value " + r.value + " · " + r.accepted_writes + " accepted write" + (r.accepted_writes === 1 ? "" : "s") +
      (r.max_token !== null ? " · highest token seen " + r.max_token : "") +
      (r.value < r.accepted_writes ? " — " + (r.accepted_writes - r.value) + " update(s) lost" : "");
    res.className = r.value < r.accepted_writes ? "gap" : "";

    var net = document.getElementById("ll-network");
    net.textContent = "";
    if (!s.network.length) { net.appendChild(el("li", "nothing in flight")); }
    s.network.forEach(function (m) {
      net.appendChild(el("li", m.from + " → " + m.to + ": " + m.text + " · in flight " + showMs(m.age) + (m.held ? " (held back by a delay)" : ""), "mono"));
    });

    Object.keys(rows).forEach(function (key) {
      rows[key].setAttribute("class", Number(key) === k ? "ll-row current" : "ll-row");
    });
    var row = rows[String(k)];
    if (row && row.scrollIntoView) { row.scrollIntoView({ block: "nearest" }); }
    var told = -1;
    Array.prototype.forEach.call(story, function (li) {
      var at = Number(li.getAttribute("data-step"));
      if (at <= k) { told = at; }
    });
    Array.prototype.forEach.call(story, function (li) {
      var at = Number(li.getAttribute("data-step"));
      var cls = at <= k ? "past" : "future";
      if (at === told) { cls += " now"; }
      if (li.getAttribute("data-violation") === "true") { cls += " violation"; }
      li.className = cls;
    });
  }

  function go(k) {
    current = Math.max(0, Math.min(last, k));
    show(current);
    remember(current);
  }

  // Deep links: `#step=N` names a step. Selecting a step replaces the hash
  // rather than pushing it, so stepping through a trace does not fill the
  // history with one entry per step.
  function linked() {
    var m = /^#step=(\d+)$/.exec(window.location.hash);
    return m ? Number(m[1]) : null;
  }
  function remember(k) {
    if (linked() === k) { return; }
    try {
      window.history.replaceState(null, "", "#step=" + k);
    } catch (e) {
      // Some browsers refuse history changes on file:// pages; the link is
      // a convenience, the viewer works without it.
    }
  }
  window.addEventListener("hashchange", function () {
    var k = linked();
    if (k !== null && k !== current) { go(k); }
  });

  // Fit to width (the default) scales the picture to the window; 1:1 draws
  // it at its own size, to read small labels and scroll.
  var diagram = document.querySelector(".diagram");
  var zoom = document.getElementById("ll-zoom");
  function fit(on) {
    diagram.classList.toggle("fit", on);
    zoom.textContent = on ? "1:1" : "fit to width";
  }
  zoom.addEventListener("click", function () { fit(!diagram.classList.contains("fit")); });
  fit(true);

  var timer = null;
  function play() {
    var button = document.getElementById("ll-play");
    if (timer !== null) { clearInterval(timer); timer = null; button.textContent = "play"; return; }
    if (current === last) { go(0); }
    button.textContent = "pause";
    timer = setInterval(function () {
      if (current >= last) { play(); return; }
      go(current + 1);
    }, 700);
  }

  slider.max = String(last);
  slider.addEventListener("input", function () { go(Number(slider.value)); });
  document.getElementById("ll-prev").addEventListener("click", function () { go(current - 1); });
  document.getElementById("ll-next").addEventListener("click", function () { go(current + 1); });
  document.getElementById("ll-play").addEventListener("click", play);
  document.addEventListener("keydown", function (e) {
    if (e.target === slider) { return; }
    if (e.key === "ArrowRight" || e.key === "ArrowDown") { go(current + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp") { go(current - 1); e.preventDefault(); }
    else if (e.key === "Home") { go(0); e.preventDefault(); }
    else if (e.key === "End") { go(last); e.preventDefault(); }
  });
  // Open where the link points, or else where the invariant breaks: the
  // step a reader came to see.
  var start = linked();
  go(start !== null ? start : data.violation_step);
})();
