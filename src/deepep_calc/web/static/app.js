/* Live updates of the calculator page.
 *
 * Every input change (debounced) posts the form as JSON to /api/evaluate (the CLI's --json
 * object) and /api/details (charts, provenance, model summary), then rewrites the results in
 * place. Nothing is computed here: numbers arrive with their unit, tag and source, and are
 * formatted the way report/view.py:fmt formats them. Without JavaScript the form posts to
 * the server, which renders the same markup.
 */
(function () {
  "use strict";
  var form = document.getElementById("scenario-form");
  if (!form) return;
  var layout = JSON.parse(document.getElementById("page-layout").textContent);
  var results = document.getElementById("results");
  var statusEl = document.getElementById("status");
  var configText = document.getElementById("f-config-text");
  var configFile = document.getElementById("f-config-file");
  var configState = document.getElementById("config-state");
  var DEBOUNCE_MS = 300;
  var timer = null;
  var seq = 0;
  var controller = null;
  var updates = 0;

  // ---- formatting (mirrors report/view.py and templates/_macros.html) ----
  function fmt(value, digits) {
    if (value === null || value === undefined || typeof value !== "number" || isNaN(value)) return "n/a";
    return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function unitShown(u) { return u === "x" || u === "1" ? "" : u; }
  function h(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { if (attrs[k] !== null && attrs[k] !== undefined) node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { node.append(c instanceof Node ? c : String(c)); });
    return node;
  }
  function badge(q) { return h("span", { "class": "tag tag-" + q.tag, title: q.tag + ": " + q.source }, [q.tag]); }
  // A sentence as report/view.py:tag_segments split it (mirrors _macros.html:sentence).
  function sentence(segments) {
    return segments.map(function (seg) {
      if (!seg.tag) return seg.text;
      return h("span", { "class": "tag tag-" + seg.tag, title: seg.tag + ": " + layout.tag_meaning[seg.tag] }, [seg.tag]);
    });
  }
  // band: the display string details.bands carries for this figure (report/view.py:band_strings)
  function num(q, digits, band) {
    var parts = [h("span", { "class": "v" }, [fmt(q.value, digits)])];
    var u = unitShown(q.unit);
    if (u) parts.push(" ", h("span", { "class": "u" }, [u]));
    parts.push(" ", badge(q));
    if (band) parts.push(" ", h("span", { "class": "band", title: layout.band_title }, [band]));
    return h("span", { "class": "num", title: q.source }, parts);
  }
  function dig(obj, path) { return path.split(".").reduce(function (o, k) { return o[k]; }, obj); }
  // labels: details.arm_labels (report/view.py:arm_label); without details, the bare arm names
  function armLabel(arm, labels) { return (labels && labels[arm]) || layout.arm_labels[arm]; }
  function armColour(data, arm) {
    if (arm === "deepep") return layout.host_proxied[data.scenario.transport] === false ? layout.colours.gpu_initiated : layout.colours.host_proxied;
    return arm === "replica" ? layout.colours.replica : layout.colours.dense;
  }
  function fill(id, nodes) { var el = document.getElementById(id); if (el) el.replaceChildren.apply(el, nodes); return el; }
  function listItems(lines, emptyText) {
    if (!lines.length && emptyText) return [h("li", { "class": "none" }, [emptyText])];
    return lines.map(function (segments) { return h("li", null, sentence(segments)); });
  }

  // mirrors report/view.py:compare_rows: the verdict's compared figures; a negative tax is a saving
  // mirrors report/view.py:target_rows: a status row per target the scenario sets
  function targetRows(data) {
    var s = data.scenario, out = [];
    if (s.slo_tok_s !== null && s.slo_tok_s !== undefined) out.push(["Per-user floor (≥ " + s.slo_tok_s + " tok/s)", "slo_status"]);
    if (s.ttft_ms !== null && s.ttft_ms !== undefined) out.push(["TTFT ceiling (≤ " + s.ttft_ms + " ms)", "ttft_status"]);
    return out;
  }

  // mirrors report/view.py:deciding_other: the deciding pair when it is not DeepEP vs the alternative
  function decidingOther(data) {
    var d = data.verdict ? data.verdict.deciding : null;
    if (!d || (d.arms[0] === "deepep" && d.arms[1] === data.scenario.alternative)) return null;
    return d;
  }
  function pairWords(arm) { return arm === "deepep" ? "DeepEP" : layout.arm_labels[arm]; }

  function compareRows(data) {
    var c = data.verdict ? data.verdict.compared : null;
    var decided = decidingOther(data);
    if (decided) c = Object.assign({}, decided, { note: "" });
    var ratio = c ? c.ratio : data.ratio_deepep_vs_alternative;
    return layout.compare_rows.map(function (row) {
      var label = row[0], key = row[1];
      var q = c ? c[layout.compared_key[key]] : data[key];
      if (q && key === "tax_ms_per_token" && q.value !== null && q.value < 0) {
        label = layout.saving_label;
        q = Object.assign({}, q, { value: -q.value });
      } else if (q && key === "tax_ms_per_token" && ratio && ratio.value > 1) {
        label = layout.longer_label;
      }
      if (decided) {
        var a = pairWords(decided.arms[0]), b = pairWords(decided.arms[1]);
        label = label.replace("DeepEP / alternative", a + " / " + b).replace("DeepEP ", a + " ");
        if (key === "tax_ms_per_token") label += " (against " + b + ")";
      }
      return [label, q, row[2], q ? "" : (c ? c.note : "")];
    });
  }

  // mirrors report/view.py:compared_row: the compared aggregates when they are not the shown ones
  function comparedRow(data) {
    var c = data.verdict ? data.verdict.compared : null;
    if (!c) return null;
    var differs = Object.keys(data.arms).some(function (arm) {
      return c.aggregate_tok_s[arm].value !== data.arms[arm].aggregate_tok_s.value;
    });
    return differs ? c.aggregate_tok_s : null;
  }

  // ---- rendering ----
  function renderVerdict(data, details) {
    var v = data.verdict;
    document.querySelectorAll("#verdict-cards .card").forEach(function (card) {
      var lit = card.getAttribute("data-code") === v.code;
      card.classList.toggle("lit", lit);
      if (lit) card.setAttribute("aria-current", "true"); else card.removeAttribute("aria-current");
      card.querySelector(".lit-label").textContent = lit ? "this scenario" : "not this one";
      var name = card.querySelector(".card-name");  // the lit card names the arm the headline runs
      if (name) name.textContent = lit ? v.title : layout.titles[card.getAttribute("data-code")];
      // the lit card's blurb is one of the verdict's reasons (verdict.blurb); the others say what
      // their category means
      var blurb = card.querySelector(".blurb");
      if (blurb) {
        var segs = lit && details && details.verdict_text.blurb.length ? details.verdict_text.blurb : null;
        if (segs) blurb.replaceChildren.apply(blurb, sentence(segs));
        else blurb.textContent = lit && v.blurb ? v.blurb : layout.blurbs[card.getAttribute("data-code")];
      }
    });
    var detail = document.getElementById("verdict-detail");
    detail.className = "verdict-detail detail-" + v.code;
    // The sentences come split around their tags (details.verdict_text); plain text otherwise.
    var vt = details ? details.verdict_text : {
      headline: [{ text: v.headline }],
      reasons: v.reasons.map(function (t) { return [{ text: t }]; }),
      advisories: v.advisories.map(function (t) { return [{ text: t }]; }),
      robustness: [{ text: "Verdict is " + v.robustness }]
    };
    fill("headline", [h("span", { "class": "sym", "aria-hidden": "true" }, [v.symbol]), " "].concat(sentence(vt.headline)));
    fill("scenario-line", [details ? details.summary : ""]);
    fill("reasons", listItems(vt.reasons));
    fill("advisories", listItems(vt.advisories, "none"));
    fill("robustness", sentence(vt.robustness));
    fill("flags-title", ["(" + v.flags.engine + ", " + (v.flags.arm || "nothing fits as asked") + ")"]);
    var line = document.getElementById("disagg-line");
    if (line) { line.textContent = v.disaggregation ? v.disaggregation.line : ""; line.hidden = !v.disaggregation; }
    var blocks = (v.flags.launch ? v.flags.launch.blocks : []).concat(
      v.flags.disaggregated ? v.flags.disaggregated.blocks : []);
    fill("flags", blocks.length ? blocks.map(function (b) {
      return h("figure", { "class": "run-block" }, [
        h("figcaption", { "class": "muted" }, [b.caption]),
        h("pre", { "class": "flags", "data-lang": b.lang }, [b.text.replace(/\n+$/, "")])
      ]);
    }) : [h("p", { "class": "muted" }, ["Nothing runs as asked: apply one of the changes in the headline and evaluate again."])]);
  }

  // the disaggregated section (report/disagg_view.py:page_rows, _macros.html:disagg_panel)
  function renderDisagg(details) {
    var section = document.getElementById("disagg-section");
    if (!section) return;
    var dv = details ? details.disaggregated : null;
    section.hidden = !dv;
    if (!dv) { fill("disagg-body", []); return; }
    var nodes = [h("p", { "class": "disagg-title" }, [h("strong", null, [dv.title])])];
    if (!dv.feasible) nodes.push(h("p", { "class": "field-error" }, ["The split cannot run: " + dv.why_not]));
    nodes.push(h("table", { "class": "arms disagg-figures" }, [h("tbody", null, dv.figures.map(function (r) {
      return h("tr", null, [h("th", { scope: "row" }, [r.label]), h("td", null, [num(r.q, r.digits, r.band)])]);
    }))]));
    var head = h("thead", null, [h("tr", null, [h("th", { scope: "col" }), h("th", { scope: "col" }, ["prefill side"]), h("th", { scope: "col" }, ["decode side"])])]);
    nodes.push(h("table", { "class": "arms disagg-sides" }, [head, h("tbody", null, dv.sides.map(function (r) {
      return h("tr", null, [h("th", { scope: "row" }, [r.label])].concat(r.cells.map(function (c) {
        return h("td", null, [c.q ? num(c.q, c.digits, c.band) : c.text]);
      })));
    }))]));
    nodes.push(h("p", { "class": "muted" }, ["Where one request's time goes:"]));
    nodes.push(h("ul", { "class": "disagg-time" }, dv.time.map(function (t) {
      return h("li", null, [h("span", { "class": "part-" + t.key }, [t.label]), ": " + fmt(t.ms, 0) + " ms (" + fmt(t.share * 100, 1) + " %) ",
        h("span", { "class": "tag tag-" + t.tag, title: t.tag + ": " + t.source }, [t.tag])]);
    })));
    nodes.push(h("p", { "class": "muted" }, [dv.balance + ". " + dv.coverage + "."]));
    fill("disagg-body", nodes);
  }

  function renderArms(data, bands, labels) {
    var arms = Object.keys(data.arms);
    var none = { arms: {}, compared: null, compare: [] };
    bands = bands || none;
    var head = [h("th", { scope: "col" })].concat(arms.map(function (arm) {
      var kids = [armLabel(arm, labels)];
      if (arm === data.verdict.recommended_arm) kids.push(" ", h("span", { "class": "star", title: "recommended" }, ["★"]));
      return h("th", { scope: "col", "class": "arm-head", style: "--arm: " + armColour(data, arm) }, kids);
    }));
    var rows = layout.arm_rows.map(function (row) {
      var u = unitShown(dig(data.arms[arms[0]], row[1]).unit);
      var label = [row[0]];
      if (u) label.push(h("span", { "class": "row-unit" }, [" (" + u + ")"]));
      return h("tr", null, [h("th", { scope: "row" }, label)].concat(arms.map(function (arm) {
        return h("td", null, [num(dig(data.arms[arm], row[1]), row[2], (bands.arms[arm] || {})[row[1]])]);
      })));
    });
    targetRows(data).forEach(function (row) {  // mirrors report/view.py:target_rows
      rows.push(h("tr", { "class": "target" }, [h("th", { scope: "row" }, [row[0]])].concat(arms.map(function (arm) {
        var st = data.arms[arm][row[1]];
        return h("td", { "class": "status status-" + (st || "none").replace(/ /g, "-") }, [st || "n/a"]);
      }))));
    });
    var compared = comparedRow(data);
    if (compared) {
      rows.push(h("tr", { "class": "compared" }, [h("th", { scope: "row" }, ["Compared aggregate (like with like)"])].concat(arms.map(function (arm) {
        return h("td", null, [num(compared[arm], 1, bands.compared && bands.compared[arm])]);
      }))));
    }
    rows.push(h("tr", null, [h("th", { scope: "row" }, ["Feasible"])].concat(arms.map(function (arm) {
      var a = data.arms[arm];
      return h("td", { "class": a.feasible ? "ok" : "bad" }, [a.feasible ? "yes" : "no: " + a.why_not]);
    }))));
    rows.push(h("tr", null, [h("th", { scope: "row" }, ["Measured cell"])].concat(arms.map(function (arm) {
      return h("td", { "class": "muted" }, [data.arms[arm].measured_cell || "—"]);
    }))));
    var table = document.getElementById("arms-table");
    table.replaceChildren(h("thead", null, [h("tr", null, head)]), h("tbody", null, rows));
    fill("compare-table", [h("tbody", null, compareRows(data).map(function (row, i) {
      var cell = row[1] ? num(row[1], row[2], bands.compare[i]) : h("span", { "class": "muted" }, ["n/a: " + row[3]]);
      return h("tr", null, [h("th", { scope: "row" }, [row[0]]), h("td", null, [cell])]);
    }))]);
  }

  function renderDetails(details) {
    var m = details.model;
    var text = ": " + m.experts + " experts, top-" + m.topk + (m.shared_experts ? ", " + m.shared_experts + " shared" : "") +
      ", hidden " + m.hidden + ", " + m.moe_layers + " of " + m.layers + " layers MoE, " + m.attention.toUpperCase() +
      " attention, weights " + m.weight_dtype + (m.expert_dtype !== m.weight_dtype ? " (experts " + m.expert_dtype + ")" : "") +
      ", KV " + m.kv_dtype + "; ";
    fill("model-summary-box", [h("p", { "class": "model-summary", id: "model-summary" }, [
      h("strong", null, [m.name]), " ", h("span", { "class": "muted" }, ["(" + m.family + ")"]), text,
      num(m.total_params_b, 1), " total, ", num(m.active_params_b, 1), " active"])]);
    var cli = document.getElementById("cli-line");
    if (cli) { cli.textContent = details.cli || "(an uploaded config.json has no CLI name: save it and pass its path)"; }
    fill("provenance-count", [String(details.provenance.length)]);
    var body = details.provenance.map(function (r) {
      var value = [r.value + " " + r.unit];
      if (r.band) value.push(" ", h("span", { "class": "band" }, [r.band]));
      return h("tr", null, [h("td", null, [r.where]), h("td", { "class": "r" }, value),
        h("td", null, [h("span", { "class": "tag tag-" + r.tag }, [r.tag])]), h("td", { "class": "src" }, [r.source])]);
    });
    var table = document.getElementById("provenance-table");
    table.replaceChild(h("tbody", null, body), table.tBodies[0]);
    if (window.deepepCharts) window.deepepCharts.draw(details.charts);
  }

  // ---- errors ----
  function clearErrors() {
    form.querySelectorAll(".field-error").forEach(function (e) { e.hidden = true; e.textContent = ""; });
    form.querySelectorAll(".has-error").forEach(function (f) { f.classList.remove("has-error"); });
    var fe = document.getElementById("form-error");
    fe.hidden = true; fe.textContent = "";
    results.classList.remove("stale");
  }
  function showError(message, field) {
    var target = field ? form.querySelector('[data-error-for="' + field + '"]') : null;
    if (target) {
      expandForm();
      target.textContent = message; target.hidden = false;
      var box = target.closest("[data-field]");
      box.classList.add("has-error");
      if (box.tagName === "DETAILS") box.open = true;
    } else {
      var fe = document.getElementById("form-error");
      fe.textContent = message; fe.hidden = false;
    }
    results.classList.add("stale");
  }
  function readError(resp, sentConfig) {
    return resp.json().then(function (j) { return j; }, function () { return {}; }).then(function (j) {
      var field = j.field || null;
      if (!field && sentConfig && (resp.status === 413 || resp.status === 422)) field = "config_json";
      return { error: j.error || resp.status + " " + resp.statusText, field: field };
    });
  }

  // ---- the request ----
  function body() {
    var data = {};
    form.querySelectorAll("[data-kind]").forEach(function (input) {
      var kind = input.getAttribute("data-kind");
      var raw = input.value.trim();
      if (kind === "bool") { data[input.name] = raw === "true"; return; }
      if (kind === "optbool") { if (raw !== "") data[input.name] = raw === "true"; return; }
      if (raw === "") return;
      if (kind === "int" || kind === "float") { var n = Number(raw); data[input.name] = isFinite(n) ? n : raw; }
      else data[input.name] = raw;
    });
    if (configText.value.trim()) data.config_json = configText.value;
    return data;
  }
  function syncUrl(data) {
    var params = new URLSearchParams();
    Object.keys(data).forEach(function (k) {
      if (k === "config_json") return;
      var shown = typeof data[k] === "boolean" ? String(data[k]) : String(data[k]);
      if (layout.defaults[k] !== shown) params.set(k, shown);
    });
    var qs = params.toString();
    history.replaceState(null, "", qs ? "?" + qs : location.pathname);
  }
  function setStatus(text) { statusEl.textContent = text; }

  function update() {
    clearTimeout(timer);
    var mine = ++seq;
    if (controller) controller.abort();
    controller = new AbortController();
    var data = body();
    var opts = { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(data), signal: controller.signal };
    setStatus("updating…");
    document.body.setAttribute("data-busy", "1");
    Promise.all([fetch("/api/evaluate", opts), fetch("/api/details", opts)]).then(function (resps) {
      if (mine !== seq) return null;
      var ev = resps[0], det = resps[1];
      if (!ev.ok) {
        return readError(ev, "config_json" in data).then(function (err) {
          if (mine !== seq) return;
          clearErrors(); showError(err.error, err.field); setStatus("");
        });
      }
      return Promise.all([ev.json(), det.ok ? det.json() : null]).then(function (pair) {
        if (mine !== seq) return;
        if (!document.getElementById("result-body")) { form.submit(); return; }
        clearErrors();
        renderVerdict(pair[0], pair[1]);
        renderArms(pair[0], pair[1] ? pair[1].bands : null, pair[1] ? pair[1].arm_labels : null);
        if (pair[1]) renderDetails(pair[1]);
        renderDisagg(pair[1]);
        syncUrl(data);
        updates += 1;
        document.body.setAttribute("data-updates", String(updates));
        setStatus("");
      });
    }).catch(function (e) {
      if (e && e.name === "AbortError") return;
      showError("could not reach the calculator server (" + (e && e.message) + ")", null);
      setStatus("");
    }).then(function () { if (mine === seq) document.body.removeAttribute("data-busy"); });
  }
  function schedule() { clearTimeout(timer); timer = setTimeout(update, DEBOUNCE_MS); }

  // ---- the form folds away on narrow screens (the verdict comes first there) ----
  var toggle = document.getElementById("form-toggle");
  var narrow = window.matchMedia("(max-width: 980px)");
  function setCollapsed(collapsed) {
    form.classList.toggle("collapsed", collapsed);
    toggle.setAttribute("aria-expanded", collapsed ? "false" : "true");
  }
  function expandForm() { setCollapsed(false); }
  toggle.addEventListener("click", function () { setCollapsed(!form.classList.contains("collapsed")); });
  narrow.addEventListener("change", function (e) { if (!e.matches) setCollapsed(false); });
  var hasError = form.querySelector(".has-error") !== null;
  setCollapsed(narrow.matches && !hasError);

  // ---- inputs that shape other inputs ----
  var instance = document.getElementById("f-instance");
  var transport = document.getElementById("f-transport");
  function filterTransports() {
    var inst = instance.value;
    var current = transport.options[transport.selectedIndex];
    Array.prototype.forEach.call(transport.options, function (o) {
      o.disabled = o.getAttribute("data-instances").split(",").indexOf(inst) < 0;
    });
    if (current && current.disabled) {
      var same = Array.prototype.find.call(transport.options, function (o) { return !o.disabled && o.className === current.className; });
      var any = Array.prototype.find.call(transport.options, function (o) { return !o.disabled; });
      (same || any).selected = true;
    }
  }
  function configChanged() {
    configState.textContent = configText.value.trim() ? "(in use: the preset is ignored)" : "";
  }

  instance.addEventListener("change", filterTransports);
  configFile.addEventListener("change", function () {
    var file = configFile.files[0];
    if (!file) return;
    file.text().then(function (text) {
      configText.value = text; configFile.value = ""; configChanged(); update();
    });
  });
  document.getElementById("config-clear").addEventListener("click", function () {
    configText.value = ""; configFile.value = ""; configChanged(); update();
  });
  form.addEventListener("input", function (e) { if (e.target !== configFile) { configChanged(); schedule(); } });
  form.addEventListener("change", function (e) { if (e.target !== configFile) schedule(); });
  form.addEventListener("submit", function (e) { e.preventDefault(); update(); });
  filterTransports();
  document.body.setAttribute("data-ready", "1");
})();
