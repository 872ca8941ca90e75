// The Trident console's page: calls the console's own JSON API (/api/…), which calls the
// agent. Credentials stay in this tab's inputs and go with each request; nothing is stored.
// Whatever the agent sends is shown as text (textContent), never as markup.
'use strict';

const $ = (id) => document.getElementById(id);
let card = null;
let nextPageToken = '';

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function showError(e) {
  const box = $('error');
  if (!e) { box.hidden = true; box.textContent = ''; return; }
  const err = e.code ? e : { code: 'error', message: String(e && e.message || e) };
  box.textContent = err.code + ': ' + err.message + (err.hint ? ' (' + err.hint + ')' : '');
  box.hidden = false;
}

function addHeaderRow(name, value) {
  const n = $('headers').children.length + 1;
  const row = el('div', null, { class: 'row header-row' });
  const nameId = 'header-name-' + n;
  const valueId = 'header-value-' + n;
  row.append(el('label', 'Header ' + n + ' name', { for: nameId }));
  const nameInput = el('input', null, { id: nameId, type: 'text', autocomplete: 'off', class: 'header-name' });
  nameInput.value = name || '';
  row.append(nameInput);
  row.append(el('label', 'value', { for: valueId }));
  // A value may be a secret: masked like the token and the key.
  const valueInput = el('input', null, { id: valueId, type: 'password', autocomplete: 'off', class: 'header-value' });
  valueInput.value = value || '';
  row.append(valueInput);
  $('headers').append(row);
}

function base() {
  const headers = [];
  for (const row of document.querySelectorAll('.header-row')) {
    const name = row.querySelector('.header-name').value.trim();
    const value = row.querySelector('.header-value').value;
    if (name) headers.push({ name, value });
  }
  return {
    agent: $('agent').value.trim(),
    auth: { bearer: $('bearer').value || null, apiKey: $('api-key').value || null, headers },
    binding: $('binding').value || null,
  };
}

async function api(path, extra) {
  const res = await fetch('/api/' + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(Object.assign(base(), extra || {})),
  });
  let body;
  try { body = await res.json(); } catch (_) { body = { error: { code: 'http_' + res.status, message: 'the console answered HTTP ' + res.status } }; }
  if (!res.ok || body.error) throw body.error || { code: 'http_' + res.status, message: 'HTTP ' + res.status };
  return body;
}

// A streaming API call: each `data:` item to `onItem`, in order, until the stream ends.
async function apiStream(path, extra, onItem) {
  const res = await fetch('/api/' + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(Object.assign(base(), extra || {})),
  });
  if (!res.ok) {
    let body;
    try { body = await res.json(); } catch (_) { body = {}; }
    throw body.error || { code: 'http_' + res.status, message: 'HTTP ' + res.status };
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const chunk = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of chunk.split('\n')) {
        if (line.startsWith('data: ')) onItem(JSON.parse(line.slice(6)));
      }
    }
    if (done) break;
  }
}

function stateName(state) {
  return (state || 'TASK_STATE_UNSPECIFIED').replace('TASK_STATE_', '').toLowerCase().replace('_', '-');
}

function partsText(parts) {
  return (parts || []).map((p) => p.text !== undefined ? p.text : JSON.stringify(p)).join('');
}

// ---- card ----

async function loadCard(event) {
  if (event) event.preventDefault();
  showError(null);
  $('connect').disabled = true;
  $('card-status').textContent = 'Reading the card…';
  try {
    const answer = await api('card');
    card = answer.card;
    renderCard(answer);
  } catch (e) {
    showError(e);
    $('card-status').textContent = '';
  } finally {
    $('connect').disabled = false;
  }
}

function renderCard(answer) {
  const c = answer.card;
  $('card-section').hidden = false;
  $('talk-section').hidden = false;
  $('tasks-section').hidden = false;
  const status = $('card-status');
  status.replaceChildren();
  const answering = answer.interfaces.filter((i) => i.answers).length;
  status.append(el('span', answer.valid ? 'Valid A2A card' : 'Invalid card', { class: answer.valid ? 'ok' : 'bad' }));
  status.append(document.createTextNode(' — ' + answering + ' of ' + answer.interfaces.length + ' interfaces answer'));
  status.dataset.valid = String(answer.valid);
  status.dataset.answering = String(answering);
  status.dataset.interfaces = String(answer.interfaces.length);
  const problems = $('card-problems');
  problems.replaceChildren(...answer.problems.map((p) => el('li', p)));

  const dl = $('card-summary');
  dl.replaceChildren();
  const field = (name, value) => { dl.append(el('dt', name), el('dd', value)); };
  field('Name', c.name);
  field('Description', c.description);
  field('Version', c.version);
  const caps = c.capabilities || {};
  field('Streaming', caps.streaming ? 'yes' : 'no');
  field('Push notifications', caps.pushNotifications ? 'yes' : 'no');
  field('Skills', (c.skills || []).map((s) => s.name).join(', '));

  const body = $('interfaces').querySelector('tbody');
  body.replaceChildren();
  const select = $('binding');
  const chosen = select.value;
  select.replaceChildren();
  for (const i of answer.interfaces) {
    const row = el('tr', null, { 'data-binding': i.binding, 'data-answers': String(i.answers) });
    row.append(el('td', i.binding), el('td', i.url), el('td', i.protocolVersion));
    const cell = el('td');
    cell.append(el('span', i.answers ? 'yes' : 'no', { class: i.answers ? 'ok' : 'bad' }), document.createTextNode(' ' + i.detail));
    row.append(cell);
    body.append(row);
    if (![...select.options].some((o) => o.value === i.binding)) {
      select.append(el('option', i.binding, { value: i.binding }));
    }
  }
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
  $('streaming').disabled = !caps.streaming;
  $('signature').textContent = answer.signature;
  $('card-raw').textContent = JSON.stringify(JSON.parse(answer.raw), null, 2);
}

// ---- talk ----

function showBinding(binding) {
  $('result-binding').textContent = 'via ' + binding;
  $('result-binding').dataset.binding = binding;
}

function resetResult() {
  $('result-binding').textContent = '';
  delete $('result-binding').dataset.binding;
  $('timeline').replaceChildren();
  delete $('timeline').dataset.done;
  $('artifacts').replaceChildren();
  $('result-raw').textContent = '';
  $('result-state').textContent = '';
  $('reply-hint').textContent = '';
}

function setState(task) {
  const state = task.status && task.status.state;
  $('result-state').textContent = '(' + stateName(state) + ')';
  $('result-state').dataset.state = state || '';
  $('result-state').dataset.taskId = task.id || task.taskId || '';
  if (state === 'TASK_STATE_INPUT_REQUIRED' || state === 'TASK_STATE_AUTH_REQUIRED') {
    $('task-id').value = task.id || task.taskId || '';
    $('context-id').value = task.contextId || '';
    const asked = task.status.message ? partsText(task.status.message.parts) : '';
    $('reply-hint').textContent = 'The task asks for input' + (asked ? ': “' + asked + '”' : '') +
      '. Type the answer as the message and Send: the task id is filled in.';
  }
}

function artifactBox(artifact) {
  const id = artifact.artifactId || 'artifact';
  let box = [...$('artifacts').children].find((b) => b.dataset.artifactId === id);
  if (!box) {
    box = el('section', null, { 'data-artifact-id': id, 'aria-label': 'Artifact ' + id });
    box.append(el('h4', 'Artifact ' + (artifact.name || id)));
    box.append(el('pre', '', { class: 'artifact-text' }));
    $('artifacts').append(box);
  }
  return box;
}

function showArtifact(artifact, append) {
  const pre = artifactBox(artifact).querySelector('pre');
  const text = partsText(artifact.parts);
  pre.textContent = append ? pre.textContent + text : text;
}

function timeline(kind, text) {
  const item = el('li', text, { 'data-event': kind });
  $('timeline').append(item);
}

function showEvent(event) {
  if (event.task) {
    const t = event.task;
    timeline('task:' + (t.status && t.status.state), 'task ' + t.id + ' ' + stateName(t.status && t.status.state));
    for (const a of t.artifacts || []) showArtifact(a, false);
    setState(t);
  } else if (event.statusUpdate) {
    const u = event.statusUpdate;
    const state = u.status && u.status.state;
    const said = u.status && u.status.message ? ': ' + partsText(u.status.message.parts) : '';
    timeline('status:' + state, 'status ' + stateName(state) + said);
    setState({ id: u.taskId, contextId: u.contextId, status: u.status });
  } else if (event.artifactUpdate) {
    const u = event.artifactUpdate;
    const a = u.artifact || {};
    timeline('artifact:' + a.artifactId, 'artifact ' + a.artifactId + (u.append ? ' (appended)' : '') +
      (u.lastChunk ? ' (last chunk)' : '') + ': ' + partsText(a.parts));
    showArtifact(a, !!u.append);
  } else if (event.message) {
    timeline('message', 'message: ' + partsText(event.message.parts));
  }
}

async function send(event) {
  event.preventDefault();
  showError(null);
  let metadata = null;
  const meta = $('metadata').value.trim();
  if (meta) {
    try { metadata = JSON.parse(meta); } catch (e) { showError({ code: 'bad_metadata', message: 'the metadata is not JSON: ' + e.message }); return; }
  }
  const extra = {
    text: $('message').value,
    metadata,
    taskId: $('task-id').value.trim() || null,
    contextId: $('context-id').value.trim() || null,
    returnImmediately: $('return-immediately').checked,
  };
  resetResult();
  $('send').disabled = true;
  const raw = [];
  try {
    if ($('streaming').checked) {
      await apiStream('stream', extra, (item) => {
        if (item.binding) showBinding(item.binding);
        if (item.event) { raw.push(item.event); showEvent(item.event); }
        if (item.error) showError(item.error);
      });
    } else {
      const answer = await api('send', extra);
      showBinding(answer.binding);
      raw.push(answer.result);
      showEvent(answer.result);
    }
    $('message').value = '';
  } catch (e) {
    showError(e);
  } finally {
    $('result-raw').textContent = JSON.stringify(raw, null, 2);
    $('timeline').dataset.done = 'true';
    $('send').disabled = false;
  }
}

function newConversation() {
  $('task-id').value = '';
  $('context-id').value = '';
  resetResult();
}

// ---- tasks ----

async function listTasks(event, more) {
  if (event) event.preventDefault();
  showError(null);
  const size = parseInt($('filter-page-size').value, 10);
  const extra = {
    contextId: $('filter-context').value.trim() || null,
    status: $('filter-status').value || null,
    pageSize: Number.isFinite(size) ? size : null,
    pageToken: more ? nextPageToken : null,
    includeArtifacts: $('filter-artifacts').checked,
  };
  const body = $('tasks').querySelector('tbody');
  delete body.dataset.loaded;
  try {
    const answer = await api('tasks/list', extra);
    const page = answer.result;
    if (!more) body.replaceChildren();
    for (const t of page.tasks || []) body.append(taskRow(t));
    nextPageToken = page.nextPageToken || '';
    $('next-page').hidden = !nextPageToken;
    $('tasks-total').textContent = '(' + (page.totalSize || 0) + ' in all)';
    body.dataset.loaded = 'true';
  } catch (e) {
    showError(e);
  }
}

function taskRow(t) {
  const state = t.status && t.status.state;
  const row = el('tr', null, { 'data-task-id': t.id, 'data-state': state || '' });
  row.append(el('td', t.id), el('td', stateName(state), { class: 'task-state' }), el('td', t.contextId));
  const actions = el('td', null, { class: 'row' });
  const open = el('button', 'Open', { type: 'button', class: 'secondary open', 'aria-label': 'Open task ' + t.id });
  open.addEventListener('click', () => openTask(t.id));
  const cancel = el('button', 'Cancel', { type: 'button', class: 'cancel', 'aria-label': 'Cancel task ' + t.id });
  cancel.addEventListener('click', () => cancelTask(t.id, row));
  const follow = el('button', 'Subscribe', { type: 'button', class: 'secondary subscribe', 'aria-label': 'Subscribe to task ' + t.id });
  follow.addEventListener('click', () => subscribe(t.id));
  actions.append(open, cancel, follow);
  row.append(actions);
  return row;
}

async function openTask(id) {
  showError(null);
  try {
    const answer = await api('tasks/get', { taskId: id, historyLength: 100 });
    const t = answer.result;
    const detail = $('task-detail');
    detail.replaceChildren();
    detail.append(el('h3', 'Task ' + t.id + ' (' + stateName(t.status && t.status.state) + ')'));
    const history = el('ol', null, { 'aria-label': 'History' });
    for (const m of t.history || []) history.append(el('li', (m.role === 'ROLE_AGENT' ? 'agent: ' : 'user: ') + partsText(m.parts)));
    detail.append(el('h4', 'History'), history);
    detail.append(el('h4', 'Artifacts'));
    for (const a of t.artifacts || []) detail.append(el('pre', (a.name || a.artifactId) + ': ' + partsText(a.parts)));
    detail.dataset.taskId = t.id;
  } catch (e) {
    showError(e);
  }
}

async function cancelTask(id, row) {
  showError(null);
  try {
    const answer = await api('tasks/cancel', { taskId: id });
    const state = answer.result.status && answer.result.status.state;
    row.dataset.state = state || '';
    row.querySelector('.task-state').textContent = stateName(state);
  } catch (e) {
    showError(e);
  }
}

async function subscribe(id) {
  showError(null);
  resetResult();
  try {
    await apiStream('tasks/subscribe', { taskId: id }, (item) => {
      if (item.event) showEvent(item.event);
      if (item.error) showError(item.error);
    });
  } catch (e) {
    showError(e);
  } finally {
    $('timeline').dataset.done = 'true';
  }
}

// ---- start ----

async function start() {
  $('agent-form').addEventListener('submit', loadCard);
  $('send-form').addEventListener('submit', send);
  $('tasks-form').addEventListener('submit', (e) => listTasks(e, false));
  $('next-page').addEventListener('click', () => listTasks(null, true));
  $('new-conversation').addEventListener('click', newConversation);
  $('add-header').addEventListener('click', () => addHeaderRow());
  addHeaderRow();
  try {
    const res = await fetch('/api/config');
    const config = await res.json();
    if (config.agent) {
      $('agent').value = config.agent;
      await loadCard();
    }
  } catch (e) {
    showError(e);
  }
  document.body.dataset.ready = 'true';
}

start();
