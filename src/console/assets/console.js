// The Trident console's page: calls the console's own JSON API (api/…, relative to the page:
// /api/ for `trident console`, /console/api/ beside a served agent), which calls the agent.
// Credentials stay in this tab's inputs and go with each request; nothing is stored.
// Whatever the agent sends is shown as text (textContent), never as markup.
'use strict';

const $ = (id) => document.getElementById(id);
let card = null;
let nextPageToken = '';
// Beside a served agent (`trident serve --console`) the API is behind the agent's own
// authentication: the credentials typed here go with each API request too.
let served = false;
// The header the served agent's API-key scheme names, read from its public card.
let apiKeyHeader = null;
// The most wire groups (API calls) the Wire section keeps, oldest dropped first.
const WIRE_GROUPS = 50;
// The most bytes of files one message carries (the console's server refuses more).
const MAX_FILE_BYTES = 4 * 1024 * 1024;

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

// The API request's headers: JSON, and beside a served agent the credentials typed here,
// which the agent's server checks before the console sees the request.
function apiHeaders() {
  const headers = { 'content-type': 'application/json' };
  if (!served) return headers;
  const request = base();
  for (const h of request.auth.headers) headers[h.name] = h.value;
  if (request.auth.bearer) headers.authorization = 'Bearer ' + request.auth.bearer;
  if (request.auth.apiKey) headers[apiKeyHeader || 'x-api-key'] = request.auth.apiKey;
  return headers;
}

// A group of the Wire section for one API call; returns the function adding its lines.
function wireGroup(path) {
  const log = $('wire');
  const item = el('li', null, { 'data-call': path });
  const stamp = new Date().toLocaleTimeString();
  item.append(el('h3', stamp + ' ' + path + ($('binding').value ? ' (' + $('binding').value + ' preferred)' : '')));
  const pre = el('pre', '', { class: 'wire-lines', tabindex: '0' });
  item.append(pre);
  log.prepend(item);
  while (log.children.length > WIRE_GROUPS) log.lastElementChild.remove();
  $('wire-section').hidden = false;
  return (lines) => {
    for (const line of lines || []) pre.textContent += line + '\n';
  };
}

async function api(path, extra) {
  const wire = wireGroup(path);
  const res = await fetch('api/' + path, {
    method: 'POST',
    headers: apiHeaders(),
    body: JSON.stringify(Object.assign(base(), extra || {})),
  });
  let body;
  try { body = await res.json(); } catch (_) { body = { error: { code: 'http_' + res.status, message: 'the console answered HTTP ' + res.status } }; }
  wire(body.wire);
  if (!res.ok || body.error) throw body.error || { code: 'http_' + res.status, message: 'HTTP ' + res.status };
  return body;
}

// A streaming API call: each `data:` item to `onItem`, in order, until the stream ends (the
// wire lines among them go to the Wire section).
async function apiStream(path, extra, onItem) {
  const wire = wireGroup(path);
  const res = await fetch('api/' + path, {
    method: 'POST',
    headers: apiHeaders(),
    body: JSON.stringify(Object.assign(base(), extra || {})),
  });
  if (!res.ok) {
    let body;
    try { body = await res.json(); } catch (_) { body = {}; }
    wire(body.wire);
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
        if (!line.startsWith('data: ')) continue;
        const item = JSON.parse(line.slice(6));
        if (item.wire !== undefined) wire([item.wire]); else onItem(item);
      }
    }
    if (done) break;
  }
}

function stateName(state) {
  return (state || 'TASK_STATE_UNSPECIFIED').replace('TASK_STATE_', '').toLowerCase().replace('_', '-');
}

// A part as text: its text, its data as JSON, a file as its name, type and size.
function partText(p) {
  if (p.text !== undefined) return p.text;
  if (p.data !== undefined) return JSON.stringify(p.data);
  if (p.raw !== undefined || p.url !== undefined) {
    const padding = p.raw !== undefined ? (p.raw.match(/=*$/) || [''])[0].length : 0;
    const size = p.raw !== undefined ? ', ' + (p.raw.length / 4 * 3 - padding) + ' bytes' : '';
    return '[file ' + (p.filename || p.url || 'unnamed') + ' (' + (p.mediaType || 'no media type') + size + ')]';
  }
  return JSON.stringify(p);
}

function partsText(parts) {
  return (parts || []).map(partText).join('');
}

// The files picked, read as base64, or an error when they are too big.
async function readFiles() {
  const files = [...$('files').files];
  let total = 0;
  for (const f of files) total += f.size;
  if (total > MAX_FILE_BYTES) {
    throw { code: 'files_too_big', message: 'the files come to ' + total + ' bytes; a message carries ' + MAX_FILE_BYTES + ' at most' };
  }
  const read = [];
  for (const f of files) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    read.push({ name: f.name, mediaType: f.type || '', bytes: btoa(binary) });
  }
  return read;
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
  const generation = answer.generation || '1.0';
  status.append(el('span', (answer.valid ? 'Valid A2A ' : 'Invalid A2A ') + generation + ' card', { class: answer.valid ? 'ok' : 'bad' }));
  status.dataset.generation = generation;
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
  // The other sections (push.js, conformance.js) show themselves from the card's answer.
  document.dispatchEvent(new CustomEvent('console:card', { detail: answer }));
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

// The event's number in the task's log (to resume after it), when the binding says.
let eventSeq = null;

function timeline(kind, text) {
  const seq = eventSeq === null || eventSeq === undefined ? '' : '#' + eventSeq + ' ';
  const item = el('li', seq + text, { 'data-event': kind });
  if (seq) item.dataset.seq = String(eventSeq);
  $('timeline').append(item);
}

function showEvent(event, seq) {
  eventSeq = seq;
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
  let data = null;
  const dataText = $('data').value.trim();
  if (dataText) {
    try { data = JSON.parse(dataText); } catch (e) { showError({ code: 'bad_data', message: 'the data part is not JSON: ' + e.message }); return; }
  }
  let files;
  try { files = await readFiles(); } catch (e) { showError(e); return; }
  const extra = {
    text: $('message').value,
    metadata,
    data,
    files,
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
        if (item.event) { raw.push(item.event); showEvent(item.event, item.seq); }
        if (item.error) showError(item.error);
      });
    } else {
      const answer = await api('send', extra);
      showBinding(answer.binding);
      raw.push(answer.result);
      showEvent(answer.result, null);
    }
    $('message').value = '';
    $('data').value = '';
    $('files').value = '';
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
    const after = parseInt($('subscribe-after').value, 10);
    const from = Number.isFinite(after) && after >= 0 ? { after } : {};
    await apiStream('tasks/subscribe', Object.assign({ taskId: id }, from), (item) => {
      if (item.event) showEvent(item.event, item.seq);
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
    const res = await fetch('api/config');
    const config = await res.json();
    served = !!config.served;
    if (served) {
      // The agent is the one served here: its public card names its API-key header.
      $('agent').readOnly = true;
      $('served-note').hidden = false;
      try {
        const own = await (await fetch('/.well-known/agent-card.json')).json();
        for (const scheme of Object.values(own.securitySchemes || {})) {
          const key = scheme.apiKeySecurityScheme;
          if (key && (key.location || '').toLowerCase() === 'header') apiKeyHeader = key.name;
        }
      } catch (_) { /* no card: the default header */ }
    }
    if (config.agent) {
      $('agent').value = config.agent;
      // Beside a served agent that wants credentials this fails until they are typed in
      // (and Load card pressed), saying so.
      await loadCard();
    }
  } catch (e) {
    showError(e);
  }
  document.body.dataset.ready = 'true';
}

start();
