// Events: each schema event per day and per window with revenue per currency, which schema revision decoded what,
// and the values a schema leaves undefined.
import { api, basisNames, basisPicker, chart, dayMaturity, readBasis, reportFilters, section, series, table } from './core.js';

const decodings = {
  decoded: 'Decoded', no_event: 'Defined as no event', undefined_value: 'Value not in the schema', no_value: 'No value', no_schema: 'No schema',
  no_version_in_force: 'No schema version in force', class_not_defined: 'Class not defined', unknown_conversion_type: 'Unknown conversion type',
};

export default {
  title: 'Events',
  async render(main, query) {
    const basis = readBasis(query);
    const filters = { ...reportFilters(query), basis };
    const [byDay, byWindow, revisions, values, maturity] = await Promise.all([
      api('reports', { ...filters, by: 'day,event' }),
      api('reports', { ...filters, by: 'event,window' }),
      api('reports', { ...filters, by: 'app,schema_revision,decoding' }),
      api('reports', { ...filters, by: 'app,decoding,value_kind,value' }),
      dayMaturity(filters),
    ]);
    const decodedDays = byDay.rows.filter((row) => row.event !== null && row.event !== '(no event)');
    basisPicker(main, basis);

    const perDay = section(main, 'Events per day', { wide: true, note: `Each event a schema maps a conversion value to; days by ${basisNames[basis]}, in ${byDay.time_zone}. Faded days still receive first-window postbacks: their figures will grow.` });
    chart(perDay, 'chart-events', 'Events per day', {
      type: 'bar', data: series(decodedDays, 'day', 'event', 'events'), young: maturity,
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });
    table(perDay, { id: 'events-by-day', caption: 'Events by day, event and currency', rows: decodedDays, columns: [
      { key: 'day', label: 'Day' }, { key: 'event', label: 'Event' }, { key: 'currency', label: 'Currency' },
      { key: 'events', label: 'Events', kind: 'count' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
      { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' }, { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
    ] });

    const perWindow = section(main, 'Events by window');
    const decodedWindows = byWindow.rows.filter((row) => row.event !== null && row.event !== '(no event)');
    chart(perWindow, 'chart-event-windows', 'Events by window', {
      type: 'bar', data: series(decodedWindows, 'event', 'window', 'events', (window) => `Window ${window}`),
      options: { scales: { y: { beginAtZero: true } } },
    });
    table(perWindow, { id: 'events-by-window', caption: 'Events by event, window and currency', rows: decodedWindows, columns: [
      { key: 'event', label: 'Event' }, { key: 'window', label: 'Window', kind: 'count' }, { key: 'currency', label: 'Currency' },
      { key: 'events', label: 'Events', kind: 'count' }, { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' },
      { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
    ] });

    const decoding = section(main, 'Schema revisions', { note: 'Which revision of each app\'s schema decoded its postbacks, and what decoding made of them.' });
    table(decoding, { id: 'revisions', caption: 'Postbacks by app, schema revision and decoding', report: revisions, rows: revisions.rows.map((row) => ({ ...row, decoding_name: decodings[row.decoding] || row.decoding })), columns: [
      { key: 'app', label: 'App' }, { key: 'schema_revision', label: 'Revision', kind: 'count' }, { key: 'decoding_name', label: 'Decoding' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'events', label: 'Events', kind: 'count' },
    ] });

    const undefinedValues = section(main, 'Values the schema leaves undefined', { note: 'Conversion values that decoded to no event: add them to the schema, then countersign redecode.' });
    table(undefinedValues, { id: 'undefined-values', caption: 'Undefined values by app', rows: values.rows.filter((row) => row.decoding === 'undefined_value'),
      empty: 'Every value received in these dates is in the schema.', columns: [
      { key: 'app', label: 'App' }, { key: 'value_kind', label: 'Kind' }, { key: 'value', label: 'Value' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' },
    ] });
  },
};
