// Postback lookup: by postback identifier or transaction id, the verification report, every copy received (with
// the unsigned fields a replay changed) and the decoded events.
import { api, APIError, element, section, stateURL, table } from './core.js';

function fieldRows(object) {
  return Object.entries(object || {}).map(([field, value]) => ({ field, value: typeof value === 'object' && value !== null ? JSON.stringify(value) : value }));
}

export default {
  title: 'Lookup',
  filters: [],
  async render(main, query) {
    const identifier = query.get('id') || '';
    const search = section(main, 'Find a postback', { wide: true, note: 'An AdAttributionKit postback-identifier or a SKAdNetwork transaction-id.' });
    const form = element('form', { role: 'search' },
      element('label', {}, 'Identifier ', element('input', { name: 'id', value: identifier, size: 40, required: true })), ' ',
      element('button', { type: 'submit', text: 'Look up' }));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      history.pushState(null, '', stateURL({ id: form.elements.id.value.trim() }));
      window.dispatchEvent(new Event('countersign:navigate'));
    });
    search.append(form);
    if (!identifier) return;
    let answer;
    try {
      answer = await api('postbacks/' + encodeURIComponent(identifier));
    } catch (error) {
      if (error instanceof APIError && error.status === 404) {
        search.append(element('p', { id: 'lookup-missing', role: 'status', text: error.message }));
        return;
      }
      throw error;
    }
    answer.postbacks.forEach((history, index) => {
      const { postback, verification, copies, events } = history;
      const found = section(main, `${postback.dedup_key}`, { wide: true,
        note: `${postback.protocol} ${postback.version ?? ''} · window ${postback.conversion_window} · ${postback.countable ? 'counted' : 'not counted'}` });
      found.setAttribute('data-postback', postback.dedup_key);
      table(found, { id: `stored-${index}`, caption: 'Stored postback', rows: fieldRows(postback), columns: [
        { key: 'field', label: 'Field' }, { key: 'value', label: 'Value' },
      ] });
      const report = section(main, 'Verification (checked again now)');
      table(report, { id: `verification-${index}`, caption: 'Verification report of the stored copy', rows: fieldRows({
        outcome: verification?.outcome, reason: verification?.reason, message: verification?.message, kid: verification?.kid,
        environment: verification?.environment, countable: verification?.countable }), columns: [
        { key: 'field', label: 'Field' }, { key: 'value', label: 'Value' },
      ] });
      table(report, { id: `signed-${index}`, caption: 'Signed fields', rows: fieldRows(verification?.signed),
        empty: 'No signed fields: nobody could verify this copy (see its verification report above).', columns: [
        { key: 'field', label: 'Field' }, { key: 'value', label: 'Value' },
      ] });
      const received = section(main, 'Every copy received', { wide: true, note: 'Duplicates repeat the stored copy exactly; replays change unsigned fields (shown); unverified copies could not be checked.' });
      table(received, { id: `copies-${index}`, caption: 'Copies received', empty: 'No copy was kept for this postback.', rows: copies.map((copy) => ({
        ...copy, stored_copy: copy.stored_copy ? 'yes' : 'no',
        unsigned_changes: Object.entries(copy.unsigned_changes || {}).map(([field, change]) => `${field}: ${JSON.stringify(change.stored)} → ${JSON.stringify(change.copy)}`).join('; '),
      })), columns: [
        { key: 'id', label: 'Receipt' }, { key: 'received_at', label: 'Received' }, { key: 'disposition', label: 'Disposition' },
        { key: 'outcome', label: 'Outcome' }, { key: 'reason', label: 'Reason' }, { key: 'stored_copy', label: 'Stored copy' },
        { key: 'route', label: 'Route' }, { key: 'unsigned_changes', label: 'Unsigned changes' },
      ] });
      const decoded = section(main, 'Decoded events');
      table(decoded, { id: `events-${index}`, caption: 'Events the schema decoded', rows: events,
        empty: 'No events: the app has no schema yet, the postback carries no value, or the schema gives its value none (docs/schemas.md).', columns: [
        { key: 'event_index', label: '#', kind: 'count' }, { key: 'name', label: 'Event' }, { key: 'count', label: 'Count', kind: 'count' },
        { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' }, { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
        { key: 'schema_revision', label: 'Revision', kind: 'count' },
      ] });
    });
  },
};
