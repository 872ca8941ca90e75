// The console's Conformance and Compare bindings sections, beside console.js (whose helpers,
// el, api, apiStream, showError and stateName, it uses). Whatever the agent sends is shown as
// text, never as markup.
'use strict';

// The bindings the card (its answer from api/card) declares for A2A 1.0.
function declaredBindings(answer) {
  const found = [];
  for (const i of answer.interfaces) {
    if (!(i.protocolVersion || '').startsWith('0.') && !found.includes(i.binding)) found.push(i.binding);
  }
  return found;
}

// Once a card is shown (the `console:card` event of console.js): the sections, and a
// checkbox per binding it declares.
function cardShown(event) {
  $('conformance-section').hidden = false;
  $('compare-section').hidden = false;
  const box = $('conformance-bindings');
  const legend = box.querySelector('legend');
  box.replaceChildren(legend);
  for (const binding of declaredBindings(event.detail)) {
    const id = 'conformance-binding-' + binding.replace(/[^A-Za-z]/g, '-');
    const input = el('input', null, { id, type: 'checkbox', value: binding, class: 'conformance-binding' });
    input.checked = true;
    box.append(input, el('label', binding, { for: id }));
  }
}

// ---- conformance ----

// The element `id`, emptied of its children and its data- attributes.
function emptied(id) {
  const node = $(id);
  node.replaceChildren();
  for (const key of Object.keys(node.dataset)) delete node.dataset[key];
  return node;
}

// Empties the table `id` and gives it a column per binding after its first ones: its body.
function bindingTable(id, bindings) {
  const head = $(id).querySelector('thead tr');
  for (const th of head.querySelectorAll('th[data-binding]')) th.remove();
  for (const b of bindings) head.append(el('th', b, { scope: 'col', 'data-binding': b }));
  const body = $(id).querySelector('tbody');
  body.replaceChildren();
  return body;
}

function outcomeCell(cell, item) {
  cell.replaceChildren();
  cell.className = 'outcome-' + item.outcome;
  cell.dataset.outcome = item.outcome;
  const word = item.outcome === 'fail' ? 'FAIL' : item.outcome;
  if (item.reason) {
    const details = el('details');
    details.append(el('summary', word), el('p', item.reason));
    cell.append(details);
  } else {
    cell.textContent = word;
  }
}

function specText(spec) {
  return (spec || []).map((s) => s.label ? s.label + ' ' + s.title : s.section).join('; ');
}

function conformancePlan(plan) {
  const body = bindingTable('conformance-results', plan.bindings);
  plan.cases.forEach((c, i) => {
    const row = el('tr', null, { 'data-case': c.case, 'data-level': c.level, 'data-index': String(i) });
    row.append(el('th', c.case, { scope: 'row' }), el('td', c.level), el('td', specText(c.spec), { class: 'spec' }));
    for (const b of plan.bindings) row.append(el('td', 'running…', { 'data-binding': b, 'data-outcome': '' }));
    body.append(row);
  });
  $('conformance-results').dataset.bindings = plan.bindings.join(',');
  $('conformance-results').hidden = false;
  if (plan.scriptedSkip) {
    $('conformance-summary').append(el('p', 'Scripted tier skipped: ' + plan.scriptedSkip, { id: 'conformance-scripted' }));
  }
}

function conformanceCell(item, counts) {
  const row = $('conformance-results').querySelector('tbody tr[data-index="' + item.index + '"]');
  const cell = row && [...row.querySelectorAll('td[data-binding]')].find((c) => c.dataset.binding === item.binding);
  if (cell) outcomeCell(cell, item);
  counts.done += 1;
  $('conformance-status').textContent = 'Running: ' + counts.done + ' of ' + counts.all + ' results in.';
}

function conformanceSummary(s) {
  const box = $('conformance-summary');
  const verdict = s.mustFailed === 0 ? 'No MUST case failed.' : s.mustFailed + ' MUST results failed.';
  box.append(el('p', verdict, { class: s.mustFailed === 0 ? 'ok' : 'bad', id: 'conformance-verdict' }));
  const table = el('table', null, { id: 'conformance-counts' });
  table.append(el('caption', 'Summary'));
  const head = el('tr');
  for (const h of ['Level', 'Passed', 'Failed', 'Skipped']) head.append(el('th', h, { scope: 'col' }));
  table.append(el('thead'));
  table.tHead.append(head);
  const body = el('tbody');
  const line = (name, c) => {
    const row = el('tr', null, { 'data-level': name });
    row.append(el('th', name, { scope: 'row' }), el('td', c.passed), el('td', c.failed), el('td', c.skipped));
    body.append(row);
  };
  for (const level of ['MUST', 'SHOULD', 'MAY']) line(level, s.levels[level]);
  line('All', s);
  table.append(body);
  box.append(table);
  if (s.agree) {
    box.append(el('p', 'The bindings agree.', { id: 'conformance-agree' }));
  } else {
    box.append(el('p', 'The bindings disagree on ' + s.disagreements.length + ' cases:', { id: 'conformance-agree' }));
    const list = el('ul');
    for (const d of s.disagreements) {
      const item = el('li', d.case + ': ');
      item.append(document.createTextNode(Object.entries(d.bindings).map(([b, what]) => b + ' ' + what).join('; ')));
      list.append(item);
    }
    box.append(list);
  }
  Object.assign(box.dataset, {
    passed: String(s.passed), failed: String(s.failed), skipped: String(s.skipped),
    mustFailed: String(s.mustFailed), agree: String(s.agree),
  });
}

async function runConformance(event) {
  event.preventDefault();
  showError(null);
  const summary = emptied('conformance-summary');
  $('conformance-results').querySelector('tbody').replaceChildren();
  const bindings = [...document.querySelectorAll('.conformance-binding')].filter((b) => b.checked).map((b) => b.value);
  const words = (id) => $(id).value.split(/[\s,]+/).filter((w) => w);
  const extra = {
    // Not sent: the cases bring their own credentials and bindings.
    auth: undefined,
    binding: undefined,
    level: $('conformance-level').value,
    bindings,
    cases: words('conformance-cases'),
    tokens: words('conformance-tokens'),
  };
  const counts = { done: 0, all: 0 };
  $('run-conformance').disabled = true;
  $('conformance-status').textContent = 'Reading the card and planning the run…';
  try {
    await apiStream('conformance', extra, (item) => {
      if (item.plan) {
        counts.all = item.plan.cases.length * item.plan.bindings.length;
        conformancePlan(item.plan);
        $('conformance-status').textContent = 'Running: 0 of ' + counts.all + ' results in.';
      }
      if (item.cell) conformanceCell(item.cell, counts);
      if (item.summary) {
        conformanceSummary(item.summary);
        $('conformance-status').textContent = 'Done: ' + counts.done + ' results.';
      }
      if (item.error) showError(item.error);
    });
  } catch (e) {
    showError(e);
    $('conformance-status').textContent = '';
  } finally {
    $('run-conformance').disabled = false;
    summary.dataset.done = 'true';
  }
}

// ---- compare bindings ----

function showComparison(answer) {
  const body = bindingTable('compare-results', answer.bindings);
  for (const f of answer.fields) {
    const row = el('tr', null, { 'data-path': f.path, 'data-differs': String(f.differs) });
    if (f.differs) row.className = 'differs';
    const name = el('th', f.path, { scope: 'row' });
    if (f.differs) name.append(document.createTextNode(' '), el('strong', '(differs)'));
    row.append(name);
    for (const v of f.values) {
      const cell = el('td');
      const text = v === null ? '(absent)' : v;
      cell.append(f.differs ? el('mark', text) : document.createTextNode(text));
      row.append(cell);
    }
    body.append(row);
  }
  filterComparison();
  $('compare-output').hidden = false;
  const raw = $('compare-raw');
  raw.replaceChildren();
  for (const a of answer.answers) {
    const details = el('details', null, { 'data-binding': a.binding });
    details.append(el('summary', 'Raw answer over ' + a.binding + (a.ok ? '' : ' (an error)')));
    details.append(el('pre', JSON.stringify(a.answer, null, 2), { tabindex: '0' }));
    raw.append(details);
  }
  const status = $('compare-status');
  status.replaceChildren();
  if (answer.agree) {
    status.append(el('span', 'The bindings agree', { class: 'ok' }),
      document.createTextNode(' (' + answer.fields.length + ' fields, ids and timestamps aside).'));
  } else {
    status.append(el('span', answer.differing + ' of ' + answer.fields.length + ' fields differ', { class: 'bad' }),
      document.createTextNode(' between the bindings (highlighted below).'));
  }
  status.dataset.agree = String(answer.agree);
  status.dataset.differing = String(answer.differing);
  // A task the first binding created, ready for a GetTask.
  const first = answer.answers.find((a) => a.ok && a.answer.task);
  if (first) $('compare-task').value = first.answer.task.id;
}

function filterComparison() {
  const only = $('compare-only-differing').checked;
  for (const row of $('compare-results').querySelectorAll('tbody tr')) {
    row.hidden = only && row.dataset.differs !== 'true';
  }
}

async function runCompare(event) {
  event.preventDefault();
  showError(null);
  const status = emptied('compare-status');
  const operation = $('compare-operation').value;
  const size = parseInt($('filter-page-size').value, 10);
  const extra = { binding: undefined };
  if (operation === 'send') extra.text = $('compare-text').value;
  if (operation === 'get') Object.assign(extra, { taskId: $('compare-task').value.trim() || null, historyLength: 100 });
  if (operation === 'list') {
    Object.assign(extra, {
      contextId: $('filter-context').value.trim() || null,
      status: $('filter-status').value || null,
      pageSize: Number.isFinite(size) ? size : null,
      includeArtifacts: $('filter-artifacts').checked,
    });
  }
  $('run-compare').disabled = true;
  status.textContent = 'Calling each binding…';
  try {
    showComparison(await api('compare/' + operation, extra));
    status.dataset.operation = operation;
  } catch (e) {
    showError(e);
    status.textContent = '';
  } finally {
    $('run-compare').disabled = false;
    status.dataset.done = 'true';
  }
}

// ---- start ----

$('conformance-form').addEventListener('submit', runConformance);
$('compare-form').addEventListener('submit', runCompare);
$('compare-only-differing').addEventListener('change', filterComparison);
document.addEventListener('console:card', cardShown);
