// The page side of the dashboard: fetch JSON, hand figures to Plotly.react, build tables.
// Stored text (completions are model-generated, hence hostile) only ever reaches the page
// as textContent, never as HTML.

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children || []) node.append(child);
  return node;
}

async function getJSON(url) {
  const response = await fetch(url);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function query(params) {
  const kept = Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined);
  return new URLSearchParams(kept).toString();
}

function fillSelect(select, values, keep, blank) {
  const current = keep || select.value;
  select.replaceChildren(...(blank ? [el("option", {value: "", text: blank})] : []),
                         ...values.map(v => el("option", {value: v, text: v})));
  if (values.includes(current)) select.value = current;
}

function table(rows) {
  if (!rows.length) return el("p", {class: "muted", text: "no rows"});
  const columns = Object.keys(rows[0]);
  const format = v => v === null ? "" : typeof v === "number" ? +v.toPrecision(4) + "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  return el("table", {}, [el("tr", {}, columns.map(c => el("th", {text: c}))),
    ...rows.map(r => el("tr", {}, columns.map(c => el("td", {text: format(r[c])}))))]);
}

function draw(div, answer) {
  div.dataset.rows = answer.rows.length;
  if (answer.figure) Plotly.react(div, answer.figure.data, answer.figure.layout, {responsive: true});
}

async function loadConfigs(select, blank) {
  const {configs} = await getJSON("/api/configs");
  fillSelect(select, configs.map(c => c.config_id), null, blank);
}

function startCharts(refreshMs) {
  const config = document.getElementById("config"), configB = document.getElementById("config_b");
  const since = document.getElementById("since"), windowS = document.getElementById("window_s");
  const driftName = document.getElementById("drift-name");
  const common = () => ({config: config.value, since: since.value, window_s: windowS.value});

  async function refresh() {
    await Promise.all([loadConfigs(config), loadConfigs(configB, "(none)")]);
    const panels = [...document.querySelectorAll("[data-panel]")].map(async div => {
      try {
        draw(div, await getJSON(`/api/panel/${div.dataset.panel}?${query(common())}`));
      } catch (error) {
        div.replaceChildren(el("p", {class: "muted", text: `${div.dataset.panel}: ${error.message}`}));
      }
    });
    await Promise.all([...panels, refreshDrift()]);
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  }

  async function refreshDrift() {
    const chart = document.getElementById("drift-chart"), target = document.getElementById("drift-table");
    try {
      const answer = await getJSON(`/api/drift/${driftName.value}?${query({...common(), config_b: configB.value})}`);
      chart.style.display = answer.figure ? "" : "none";
      draw(chart, answer);
      target.replaceChildren(table(answer.rows));
    } catch (error) {
      target.replaceChildren(el("p", {class: "muted", text: error.message}));
    }
  }

  for (const input of [config, since, windowS]) input.addEventListener("change", refresh);
  for (const input of [driftName, configB]) input.addEventListener("change", refreshDrift);
  document.getElementById("controls").addEventListener("submit", e => { e.preventDefault(); refresh(); });
  refresh();
  setInterval(refresh, refreshMs);
}

function diffView(diff) {
  return el("pre", {}, diff.split("\n").map(line => el("span", {
    class: line.startsWith("+") ? "diff-add" : line.startsWith("-") ? "diff-del" : "", text: line + "\n"})));
}

function reviewForm(sample) {
  const status = el("span", {class: "muted review-status",
    text: sample.review_verdict ? `reviewed: ${sample.review_verdict} ${sample.review_hack_class}` : ""});
  const hackClass = el("input", {class: "hack-class", placeholder: "hack class (e.g. hardcoded_output)", size: 28});
  const note = el("input", {class: "note", placeholder: "note", size: 30});
  async function send(verdict) {
    const response = await fetch("/api/reviews", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({rollout_id: sample.rollout_id, config_id: sample.config_id, verdict,
                            hack_class: verdict === "hack" ? hackClass.value : "", note: note.value})});
    const body = await response.json();
    status.textContent = response.ok ? `recorded: ${verdict} ${body.review.hack_class}` : `refused: ${JSON.stringify(body.error)}`;
  }
  const hack = el("button", {type: "button", class: "mark-hack", text: "hack"});
  const fine = el("button", {type: "button", class: "mark-fine", text: "fine"});
  hack.addEventListener("click", () => send("hack"));
  fine.addEventListener("click", () => send("fine"));
  return el("div", {class: "review"}, [hackClass, note, hack, fine, status]);
}

function sampleCard(sample, reviewing) {
  const number = v => v === null ? "" : (+v.toPrecision(4)).toString();
  const meta = el("div", {class: "meta"}, [
    el("strong", {text: sample.rollout_id}),
    el("span", {text: `task ${sample.task_id} · ${sample.bug_pattern} · version ${sample.policy_version}`}),
    el("span", {text: `tests ${sample.tests_passed}/${sample.tests_total} ${sample.error_kind}`}),
    el("span", {text: `enhanced reward ${number(sample.reward_enhanced)} · raw ${number(sample.reward_raw)} · advantage ${number(sample.advantage)}`}),
    el("span", {class: "flags", text: (sample.hack_flags || []).join(", ")}),
  ]);
  const reward = el("table", {}, [el("tr", {}, ["component", "R_c", "w_c", "w_c·R_c"].map(t => el("th", {text: t}))),
    ...sample.reward.map(r => el("tr", {}, [r.component, number(r.value), number(r.weight), number(r.contribution)]
      .map(t => el("td", {text: t}))))]);
  const tests = el("ul", {}, sample.tests.map(t => el("li", {class: t.passed ? "pass" : "fail",
    text: `test ${t.index}: ${t.passed ? "passed" : "failed"} ${t.error_kind} ${t.message}`})));
  const buggy = el("details", {}, [el("summary", {text: "buggy code"}), el("pre", {text: sample.buggy_code})]);
  return el("div", {class: "sample", "data-rollout": sample.rollout_id}, [
    meta, reward, tests, el("div", {text: "completion, as a diff against the buggy code:"}), diffView(sample.diff),
    buggy, ...(reviewing ? [reviewForm(sample)] : [])]);
}

function startSamples() {
  const ids = ["kind", "config", "pattern", "version_min", "version_max", "since", "seed"];
  const field = Object.fromEntries(ids.map(id => [id, document.getElementById(id)]));
  const target = document.getElementById("samples");
  const reviewing = target.dataset.reviewing === "yes";

  async function loadFacets() {
    const answer = await getJSON(`/api/facets?${query({config: field.config.value})}`);
    fillSelect(field.config, answer.configs, answer.config);
    fillSelect(field.pattern, (answer.facets[0] || {}).bug_patterns || [], null, "every pattern");
  }

  // Answers may come back out of order (the first load and a quick change of filters): only
  // the latest request's is shown, and `data-shown` names the filters of what is on the page.
  let latest = 0;
  async function show() {
    const params = Object.fromEntries(ids.map(id => [id, field[id].value]));
    const request = ++latest;
    let cards;
    try {
      const answer = await getJSON(`/api/samples?${query(params)}`);
      cards = answer.samples.length ? answer.samples.map(s => sampleCard(s, reviewing))
                                    : [el("p", {class: "muted", text: "no samples"})];
    } catch (error) {
      cards = [el("p", {class: "muted", text: error.message})];
    }
    if (request !== latest) return;
    target.replaceChildren(...cards);
    target.dataset.shown = query(params);
  }

  field.config.addEventListener("change", async () => { await loadFacets(); show(); });
  document.getElementById("filters").addEventListener("submit", e => { e.preventDefault(); show(); });
  loadFacets().then(show);
}
