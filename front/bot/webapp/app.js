// The Mini App's page script: reads Telegram's launch data, calls /api/ with it, and draws
// the account. Everything from the API is put in the page as text (textContent), never as HTML.
(function () {
  'use strict';

  var SVG = 'http://www.w3.org/2000/svg';
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  var tg = window.Telegram && window.Telegram.WebApp ? window.Telegram.WebApp : null;

  // Launch parameters: from Telegram's script when it loaded, else from the URL fragment,
  // where Telegram puts them (#tgWebAppData=…&tgWebAppThemeParams=…).
  var launch = new URLSearchParams(location.hash.slice(1));
  var initData = (tg && tg.initData) || launch.get('tgWebAppData') || '';
  var theme = (tg && tg.themeParams && Object.keys(tg.themeParams).length) ? tg.themeParams : parseJSON(launch.get('tgWebAppThemeParams'));

  var me = null, lastUsage = null;
  var $ = function (id) { return document.getElementById(id); };

  function parseJSON(s) {
    try { return s ? JSON.parse(s) : {}; } catch (e) { return {}; }
  }

  // applyTheme sets --tg-theme-<name> for each colour of Telegram's themeParams.
  function applyTheme(p) {
    Object.keys(p || {}).forEach(function (k) {
      var v = String(p[k]);
      if (/^[a-z_]+$/.test(k) && /^#[0-9a-fA-F]{3,8}$/.test(v)) {
        document.documentElement.style.setProperty('--tg-theme-' + k.replace(/_/g, '-'), v);
      }
    });
  }

  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function svg(tag, attrs, text) {
    var n = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function say(msg, isError) {
    var s = $('status');
    s.textContent = msg;
    s.className = isError ? 'error' : '';
    s.hidden = !msg;
  }

  function api(method, path, body) {
    var opts = { method: method, headers: { 'Authorization': 'tma ' + initData } };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    return fetch(path, opts).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) {
          var e = new Error((j.error && j.error.message) || ('HTTP ' + r.status));
          e.status = r.status;
          throw e;
        }
        return j;
      });
    });
  }

  function confirmThen(msg, then) {
    if (tg && tg.showConfirm && tg.isVersionAtLeast && tg.isVersionAtLeast('6.2')) {
      tg.showConfirm(msg, function (ok) { if (ok) then(); });
    } else if (window.confirm(msg)) {
      then();
    }
  }

  function dayLabel(d) { return MONTHS[+d.slice(5, 7) - 1] + ' ' + (+d.slice(8, 10)); }

  // barsByDay draws the spend of each day as a column, with the largest day's amount on a
  // dashed line; the SVG is sized in pixels to its box, so text stays legible at 390 px.
  function barsByDay(box, usage) {
    box.textContent = '';
    var w = Math.max(box.clientWidth, 280), h = 170, left = 8, right = 8, top = 18, bottom = 22;
    var days = usage.days, cur = usage.currency;
    var max = 0, maxDay = null;
    days.forEach(function (d) { var v = parseFloat(d.cost); if (v > max) { max = v; maxDay = d; } });
    var s = svg('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img', 'aria-labelledby': 'days-title' });
    s.appendChild(svg('title', { id: 'days-title' }, 'Spend per day over ' + days.length + ' days: ' + usage.total + ' ' + cur + ' in total' +
      (maxDay ? ', most on ' + maxDay.day + ' (' + maxDay.cost + ' ' + cur + ')' : ', nothing spent')));
    var plotH = h - top - bottom, step = (w - left - right) / days.length, bw = Math.max(2, step * 0.7);
    s.appendChild(svg('line', { 'class': 'axis', x1: left, x2: w - right, y1: top + plotH + 0.5, y2: top + plotH + 0.5 }));
    if (max > 0) {
      s.appendChild(svg('line', { 'class': 'grid', x1: left, x2: w - right, y1: top + 0.5, y2: top + 0.5 }));
      s.appendChild(svg('text', { x: left, y: top - 5, 'class': 'muted' }, maxDay.cost + ' ' + cur));
    }
    days.forEach(function (d, i) {
      var v = parseFloat(d.cost), bh = max > 0 ? Math.max(v > 0 ? 2 : 0, v / max * plotH) : 0;
      var r = svg('rect', { 'class': 'bar', x: (left + i * step + (step - bw) / 2).toFixed(1), y: (top + plotH - bh).toFixed(1), width: bw.toFixed(1), height: bh.toFixed(1) });
      r.appendChild(svg('title', {}, d.day + ': ' + d.cost + ' ' + cur + ', ' + d.requests + ' requests'));
      s.appendChild(r);
    });
    [0, Math.floor(days.length / 2), days.length - 1].forEach(function (i, n) {
      var anchor = ['start', 'middle', 'end'][n], x = n === 0 ? left : n === 2 ? w - right : left + (i + 0.5) * step;
      s.appendChild(svg('text', { x: x, y: h - 5, 'text-anchor': anchor, 'class': 'muted' }, dayLabel(days[i].day)));
    });
    box.appendChild(s);
  }

  // barsByModel draws one labelled horizontal bar per model, largest first.
  function barsByModel(box, usage) {
    box.textContent = '';
    var models = usage.models, cur = usage.currency;
    if (!models.length) {
      box.appendChild(el('p', { 'class': 'hint' }, 'No requests in these 30 days.'));
      return;
    }
    var w = Math.max(box.clientWidth, 280), row = 40, h = models.length * row + 4;
    var max = 0;
    models.forEach(function (m) { max = Math.max(max, parseFloat(m.cost)); });
    var s = svg('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img', 'aria-labelledby': 'models-title' });
    s.appendChild(svg('title', { id: 'models-title' }, 'Spend per model: ' + models.map(function (m) { return m.model + ' ' + m.cost + ' ' + cur; }).join(', ')));
    models.forEach(function (m, i) {
      var y = i * row, v = parseFloat(m.cost), bw = max > 0 ? Math.max(v > 0 ? 2 : 0, v / max * (w - 4)) : 0;
      s.appendChild(svg('text', { x: 0, y: y + 14 }, m.model));
      s.appendChild(svg('text', { x: w, y: y + 14, 'text-anchor': 'end', 'class': 'muted' }, m.cost + ' ' + cur + ' · ' + m.requests + ' req'));
      s.appendChild(svg('rect', { 'class': 'bar', x: 0, y: y + 20, width: bw.toFixed(1), height: 12, rx: 3 }));
    });
    box.appendChild(s);
  }

  function loadUsage() {
    var key = $('usage-key').value;
    return api('GET', '/api/usage' + (key ? '?key=' + encodeURIComponent(key) : '')).then(function (u) {
      $('usage-total').textContent = u.total + ' ' + u.currency + ' in ' + u.requests + ' requests';
      $('usage-sec').hidden = false; // shown first: the charts take their box's width
      lastUsage = u; // redrawn on resize
      barsByDay($('chart-days'), u);
      barsByModel($('chart-models'), u);
    });
  }

  function showSecret(res, rotated) {
    var base = res.base_url, sec = res.secret;
    $('secret-title').textContent = 'Key ' + res.key.name + (rotated ? ' rotated: the old secret no longer works.' : ' created.');
    $('secret-env').textContent = sec + '\n\nexport OPENAI_BASE_URL=' + base + '/v1\nexport OPENAI_API_KEY=' + sec +
      '\nexport ANTHROPIC_BASE_URL=' + base + '\nexport ANTHROPIC_API_KEY=' + sec;
    $('secret').hidden = false;
    $('secret-copy').onclick = function () {
      if (navigator.clipboard) navigator.clipboard.writeText(sec).then(function () { $('secret-copy').textContent = 'Copied'; });
    };
    $('secret-done').onclick = function () {
      $('secret-env').textContent = '';
      $('secret').hidden = true;
    };
  }

  function keyItem(k) {
    var cur = me.profile.currency;
    var li = el('li');
    var head = el('div', { 'class': 'key-head' });
    var name = el('span', { 'class': 'key-name' }, k.name + ' ');
    name.appendChild(el('code', {}, k.prefix + '…'));
    head.appendChild(name);
    head.appendChild(el('span', { 'class': k.state === 'ACTIVE' ? 'state-active' : 'state-revoked' }, k.state === 'ACTIVE' ? 'Active' : 'Revoked'));
    li.appendChild(head);
    var dl = el('dl');
    var add = function (t, d) { dl.appendChild(el('dt', {}, t)); dl.appendChild(el('dd', {}, d)); };
    add('Spent, 30 days', k.spend + ' ' + cur + ' · ' + k.requests + ' requests');
    add('Budget', k.budget ? (k.budget_spent || '0') + ' of ' + k.budget.amount + ' ' + cur + ' ' + (k.budget.period === 'TOTAL' ? 'in total' : 'per ' + k.budget.period.toLowerCase()) +
      (k.budget_resets_at ? ', resets ' + k.budget_resets_at.slice(0, 10) : '') : 'none');
    add('Limits', [k.max_requests_per_second ? k.max_requests_per_second + ' req/s' : '', k.max_concurrent_requests ? k.max_concurrent_requests + ' at once' : '',
      k.max_tokens_per_minute ? k.max_tokens_per_minute + ' tokens/min' : ''].filter(Boolean).join(', ') || 'none');
    add('Expires', k.expire_time ? k.expire_time.slice(0, 16).replace('T', ' ') + ' UTC' : 'never');
    add('Endpoints', k.allowed_endpoints.join(', '));
    add('Models', k.allowed_models.join(', '));
    li.appendChild(dl);
    if (k.state !== 'ACTIVE') return li;

    var f = el('form', { 'class': 'budget' });
    var amountID = 'budget-' + k.id, periodID = 'period-' + k.id;
    f.appendChild(el('label', { 'for': amountID }, 'Budget for ' + k.name + ', ' + cur));
    var row = el('div', { 'class': 'row' });
    var amount = el('input', { id: amountID, inputmode: 'decimal', autocomplete: 'off', value: k.budget ? k.budget.amount : '' });
    var period = el('select', { id: periodID, 'aria-label': 'Budget period for ' + k.name });
    ['DAY', 'WEEK', 'MONTH', 'TOTAL'].forEach(function (p) {
      var o = el('option', { value: p }, p === 'TOTAL' ? 'in total' : 'per ' + p.toLowerCase());
      if ((k.budget ? k.budget.period : 'MONTH') === p) o.selected = true;
      period.appendChild(o);
    });
    row.appendChild(amount);
    row.appendChild(period);
    row.appendChild(el('button', { type: 'submit' }, 'Save budget'));
    f.appendChild(row);
    f.onsubmit = function (e) {
      e.preventDefault();
      act(api('PATCH', '/api/keys/' + encodeURIComponent(k.id), { budget: { amount: amount.value, period: period.value } }), 'Budget saved.');
    };
    li.appendChild(f);
    var buttons = el('div', { 'class': 'row' });
    if (k.budget) {
      var off = el('button', { type: 'button', 'class': 'secondary' }, 'Remove budget');
      off.onclick = function () { act(api('PATCH', '/api/keys/' + encodeURIComponent(k.id), { budget: null }), 'Budget removed.'); };
      buttons.appendChild(off);
    }
    var rot = el('button', { type: 'button', 'class': 'secondary' }, 'Rotate');
    rot.onclick = function () {
      confirmThen('Rotate ' + k.name + '? A new secret replaces it; the old one stops working.', function () {
        act(api('POST', '/api/keys/' + encodeURIComponent(k.id) + '/rotate').then(function (r) { showSecret(r, true); }), 'Key rotated.');
      });
    };
    var rev = el('button', { type: 'button', 'class': 'danger' }, 'Revoke');
    rev.onclick = function () {
      confirmThen('Revoke ' + k.name + '? It stops working at once.', function () {
        act(api('POST', '/api/keys/' + encodeURIComponent(k.id) + '/revoke'), 'Key revoked.');
      });
    };
    buttons.appendChild(rot);
    buttons.appendChild(rev);
    li.appendChild(buttons);
    return li;
  }

  // act runs a change, then reloads the account and says how it went.
  // Buttons are disabled meanwhile, so a double tap does not create or rotate twice.
  function act(p, done) {
    say('Working…');
    var off = Array.prototype.filter.call(document.querySelectorAll('button'), function (b) { return !b.disabled; });
    off.forEach(function (b) { b.disabled = true; });
    var again = function () { off.forEach(function (b) { b.disabled = false; }); };
    return p.then(function () { return load(); }).then(function () { again(); say(done); }, function (e) { again(); say(e.message, true); });
  }

  function render() {
    var p = me.profile, cur = p.currency;
    $('who').textContent = me.user.name ? 'Signed in through Telegram as ' + me.user.name : '';
    $('balance').textContent = p.balance + ' ' + cur;
    $('available').textContent = 'Available now: ' + p.available + ' ' + cur + ' (the balance less what requests in flight hold)';
    Array.prototype.forEach.call(document.querySelectorAll('.cur'), function (n) { n.textContent = cur; });
    var t = me.topup;
    $('topup-form').hidden = !t.enabled;
    $('topup-off').hidden = t.enabled;
    if (t.enabled) {
      $('topup-terms').textContent = 'From ' + t.min + ' to ' + t.max + ' ' + cur + '. ' +
        (t.stars_rate ? 'Paid in Telegram Stars at ' + t.stars_rate + ' ' + cur + ' per star, rounded up to whole stars.' : 'Paid through Telegram Payments.');
    }
    $('balance-sec').hidden = false;

    var list = $('keys');
    list.textContent = '';
    me.keys.forEach(function (k) { list.appendChild(keyItem(k)); });
    if (!me.keys.length) list.appendChild(el('li', { 'class': 'hint' }, 'No keys yet. Create one above.'));
    $('keys-sec').hidden = false;

    var sel = $('usage-key'), chosen = sel.value;
    while (sel.options.length > 1) sel.remove(1);
    me.keys.forEach(function (k) {
      var o = el('option', { value: k.id }, k.name + ' (' + k.prefix + '…)');
      if (k.id === chosen) o.selected = true;
      sel.appendChild(o);
    });
  }

  function loadModels() {
    return api('GET', '/api/models').then(function (r) {
      var body = document.querySelector('#models tbody');
      body.textContent = '';
      r.models.forEach(function (m) {
        m.prices.forEach(function (p, i) {
          var tr = el('tr');
          var th = el('th', { scope: 'row' }, i === 0 ? m.id : '');
          if (i === 0 && m.display_name && m.display_name !== m.id) th.appendChild(el('div', { 'class': 'hint' }, m.display_name));
          tr.appendChild(th);
          tr.appendChild(el('td', {}, p.endpoint_families.join(', ')));
          var parts = Object.keys(p.components).sort().map(function (k) { return k + ' ' + p.components[k]; });
          tr.appendChild(el('td', { 'class': 'price' }, parts.join('; ') || 'not priced'));
          body.appendChild(tr);
        });
      });
      $('models-h').textContent = 'Models and prices (' + r.currency + ')';
      $('models-sec').hidden = false;
    });
  }

  // loadBatches lists the user's batches of the window with their request counts.
  function loadBatches() {
    return api('GET', '/api/batches').then(function (r) {
      $('batches-h').textContent = 'Batches, last ' + r.days + ' days';
      $('batches-total').textContent = r.count
        ? r.count + (r.count === 1 ? ' batch' : ' batches') + (r.running ? ', ' + r.running + ' running' : '') + ': ' +
          r.done + ' of ' + r.total + ' requests done, ' + r.failed + ' failed'
        : 'No batches. The OpenAI and Anthropic batch APIs run them with your keys.';
      var list = $('batches');
      list.textContent = '';
      r.batches.forEach(function (b) {
        var li = el('li');
        li.appendChild(el('div', {}, b.id + ' · ' + b.status.replace('_', ' ')));
        li.appendChild(el('div', { 'class': 'hint' }, b.endpoint + ' · ' + b.done + ' of ' + b.total + ' done, ' + b.failed + ' failed · ' +
          b.create_time.slice(0, 16).replace('T', ' ') + ' UTC'));
        list.appendChild(li);
      });
      $('batches-sec').hidden = false;
    });
  }

  function load() {
    return api('GET', '/api/me').then(function (m) {
      me = m;
      render();
      return Promise.all([loadUsage(), loadBatches()]);
    });
  }

  function start() {
    applyTheme(theme);
    if (tg) {
      if (tg.onEvent) tg.onEvent('themeChanged', function () { applyTheme(tg.themeParams); });
      if (tg.ready) tg.ready();
      if (tg.expand) tg.expand();
    }
    if (!initData) {
      say('Open this page from the bot\'s menu button in Telegram: it needs Telegram\'s sign-in.', true);
      return;
    }
    $('usage-key').onchange = function () { loadUsage().catch(function (e) { say(e.message, true); }); };
    $('newkey-form').onsubmit = function (e) {
      e.preventDefault();
      var name = $('newkey-name').value;
      act(api('POST', '/api/keys', { name: name }).then(function (r) { $('newkey-name').value = ''; showSecret(r, false); }), 'Key created.');
    };
    $('topup-form').onsubmit = function (e) {
      e.preventDefault();
      say('Preparing the invoice…');
      api('POST', '/api/topup', { amount: $('topup-amount').value }).then(function (r) {
        say('');
        if (tg && tg.openInvoice) {
          tg.openInvoice(r.link, function (st) {
            if (st === 'paid') { say('Paid: your balance updates in a moment.'); setTimeout(function () { load(); }, 2000); }
            else if (st === 'failed') say('The payment failed.', true);
          });
        } else {
          window.open(r.link, '_blank');
        }
      }, function (e) { say(e.message, true); });
    };
    // The charts are drawn in pixels to their box's width: redrawn when it changes (a phone
    // turned, a desktop window resized). A ResizeObserver runs before the next paint, so no
    // frame shows a chart of the old width.
    var drawnWidth = 0;
    var redraw = function () {
      var w = $('chart-days').clientWidth;
      if (lastUsage && w && w !== drawnWidth) {
        drawnWidth = w;
        barsByDay($('chart-days'), lastUsage);
        barsByModel($('chart-models'), lastUsage);
      }
    };
    if (window.ResizeObserver) new ResizeObserver(redraw).observe($('chart-days'));
    else window.addEventListener('resize', redraw);
    Promise.all([load(), loadModels()]).then(function () { say(''); }, function (e) {
      say(e.status === 401 ? 'Telegram\'s sign-in is invalid or expired: close and reopen the app from the bot.' : e.message, true);
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
