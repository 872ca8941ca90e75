// The console page's Push section: watching a task asks the agent (through the console's
// API, on the binding picked under Talk) to post the task's events to a webhook of the
// console's own server; the deliveries the server kept are fetched every half second and
// shown as they arrive, their secret headers already masked by the server. Uses the helpers
// of console.js ($, el, api, showError, stateName). Whatever an agent sent is shown as text
// (textContent), never as markup.
'use strict';

(() => {
  const POLL_MS = 500;
  let seen = 0;
  let polling = false;
  // Whether the task id was typed here (then it is not replaced by the current task's).
  let typed = false;

  function prefill(id) {
    if (id && !typed) $('push-task').value = id;
  }

  function pushTask() {
    const id = $('push-task').value.trim();
    if (!id) throw { code: 'bad_request', message: 'give the id of the task to watch' };
    return id;
  }

  function showConfig(answer) {
    const pre = $('push-config');
    pre.textContent = JSON.stringify(answer.result, null, 2);
    pre.dataset.configId = answer.result.id || '';
    pre.dataset.taskId = answer.result.taskId || '';
    pre.dataset.binding = answer.binding;
    pre.dataset.url = answer.webhook.url;
  }

  async function watch(event) {
    event.preventDefault();
    showError(null);
    $('push-watch').disabled = true;
    try {
      const answer = await api('push/watch', { taskId: pushTask() });
      showConfig(answer);
      $('push-status').textContent = 'Watching task ' + answer.result.taskId + ' via ' +
        answer.binding + ': the agent posts its events to ' + answer.webhook.url + '.';
      startPolling();
    } catch (e) {
      showError(e);
    } finally {
      $('push-watch').disabled = false;
    }
  }

  async function listConfigs() {
    showError(null);
    const table = $('push-configs');
    const body = table.querySelector('tbody');
    delete body.dataset.loaded;
    try {
      const taskId = pushTask();
      const answer = await api('push/configs', { taskId });
      body.replaceChildren();
      for (const item of answer.result.configs || []) body.append(configRow(taskId, item));
      table.hidden = false;
      body.dataset.loaded = 'true';
    } catch (e) {
      showError(e);
    }
  }

  function configRow(taskId, item) {
    const c = item.config;
    const row = el('tr', null, { 'data-config-id': c.id || '' });
    row.append(el('td', c.id), el('td', c.url), el('td', item.console ? 'yes' : 'no'));
    const actions = el('td');
    const del = el('button', 'Delete', { type: 'button', class: 'secondary delete-config', 'aria-label': 'Delete push config ' + c.id });
    del.addEventListener('click', async () => {
      showError(null);
      try {
        await api('push/delete', { taskId, configId: c.id });
        row.remove();
        $('push-status').textContent = 'Deleted push config ' + c.id + ' of task ' + taskId + '.';
      } catch (e) {
        showError(e);
      }
    });
    actions.append(del);
    row.append(actions);
    return row;
  }

  function startPolling() {
    if (polling) return;
    polling = true;
    poll();
  }

  async function poll() {
    try {
      const res = await fetch('api/push/deliveries', {
        method: 'POST',
        headers: apiHeaders(),
        body: JSON.stringify({ after: seen }),
      });
      if (res.ok) {
        const answer = await res.json();
        for (const d of answer.deliveries) {
          if (d.seq > seen) {
            $('push-deliveries').append(deliveryItem(d));
            seen = d.seq;
          }
        }
        const count = $('push-deliveries').children.length;
        $('push-count').textContent = '(' + count + ')';
        $('push-deliveries').dataset.count = String(count);
        $('push-refused').textContent = answer.refused
          ? answer.refused + ' post(s) to a webhook refused: no token or another one, or too large.'
          : '';
      }
    } catch (_) {
      // The console stopped or the network blinked: the next round tries again.
    }
    setTimeout(poll, POLL_MS);
  }

  function deliveryItem(d) {
    const item = el('li', null, {
      'data-seq': String(d.seq),
      'data-kind': d.kind || '',
      'data-task-id': d.taskId || '',
      'data-state': d.state || '',
      'data-webhook': d.webhook,
    });
    const when = new Date(d.receivedAtMs).toISOString();
    const line = el('p');
    line.append(el('time', when, { datetime: when }), document.createTextNode(' '));
    line.append(el('strong', d.kind || 'not an event'));
    let said = '';
    if (d.taskId) said += ' task ' + d.taskId;
    if (d.state) said += ' ' + stateName(d.state);
    if (d.taskId && d.taskId !== d.watchedTask) said += ' (not the task watched: ' + d.watchedTask + ')';
    said += ' — webhook configured over ' + d.binding + ', ' + d.size + ' bytes';
    line.append(document.createTextNode(said));
    item.append(line);
    const headers = el('dl', null, { class: 'push-headers', 'aria-label': 'Headers of delivery ' + d.seq });
    for (const h of d.headers) {
      headers.append(el('dt', h.name), el('dd', h.value, { 'data-header': h.name, 'data-masked': String(h.masked) }));
    }
    item.append(headers);
    const details = el('details');
    details.append(el('summary', 'Body'));
    const text = typeof d.body === 'string' ? d.body : JSON.stringify(d.body, null, 2);
    details.append(el('pre', text, { tabindex: '0', class: 'push-body' }));
    item.append(details);
    return item;
  }

  function follow(node, attribute, onChange) {
    new MutationObserver(onChange).observe(node, { attributes: true, attributeFilter: [attribute] });
  }

  $('push-form').addEventListener('submit', watch);
  $('push-list').addEventListener('click', listConfigs);
  $('push-task').addEventListener('input', () => { typed = $('push-task').value.trim() !== ''; });
  // Shown with the other sections, once a card is read.
  document.addEventListener('console:card', () => { $('push-section').hidden = false; });
  // The current task (the last answer's, or the task opened in the list) fills in the id.
  follow($('result-state'), 'data-task-id', () => prefill($('result-state').dataset.taskId));
  follow($('task-detail'), 'data-task-id', () => prefill($('task-detail').dataset.taskId));
})();
