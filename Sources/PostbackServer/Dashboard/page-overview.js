// Overview: what became of every postback per day, counted conversions by protocol, installs against
// re-engagements, postbacks without a conversion value and the crowd-anonymity tier mix.
import { api, chart, format, reportFilters, section, series, table, tiles, total } from './core.js';

const statusNames = {
  counted: 'Counted', development: 'Development', not_counted: 'Not counted', unverifiable: 'Unverifiable',
  duplicate: 'Duplicate', replay: 'Replay', unverified_copy: 'Unverified copy', rejected: 'Rejected',
};

export default {
  title: 'Overview',
  async render(main, query) {
    const filters = reportFilters(query);
    const intakeFilters = reportFilters(query, { uncounted: false });
    const [intake, rejected, byDay, byTier] = await Promise.all([
      api('intake', { ...intakeFilters, by: 'day,status' }),
      api('intake', { ...intakeFilters, status: 'rejected', by: 'reason' }),
      api('reports', { ...filters, by: 'day,protocol' }),
      api('reports', { ...filters, by: 'tier' }),
    ]);
    const postbacks = total(byDay.rows, 'postbacks');
    const withoutValue = byTier.rows.reduce((sum, row) => sum + Number(row.share_without_value) * Number(row.postbacks), 0);
    tiles(section(main, 'Totals', { wide: true, note: `Days in ${byDay.time_zone}.` }), [
      { id: 'counted', label: 'Counted postbacks', value: postbacks, shown: format.count(postbacks) },
      { id: 'installs', label: 'Installs', value: total(byDay.rows, 'installs'), shown: format.count(total(byDay.rows, 'installs')) },
      { id: 're_engagements', label: 'Re-engagements', value: total(byDay.rows, 're_engagements'), shown: format.count(total(byDay.rows, 're_engagements')) },
      { id: 'duplicates', label: 'Duplicates', value: total(intake.rows.filter((row) => row.status === 'duplicate'), 'postbacks'),
        shown: format.count(total(intake.rows.filter((row) => row.status === 'duplicate'), 'postbacks')) },
      { id: 'share_without_value', label: 'Without a conversion value', value: postbacks ? withoutValue / postbacks : '',
        shown: postbacks ? format.share(withoutValue / postbacks) : '–' },
    ]);

    const outcomes = section(main, 'Postbacks per day by outcome', { note: 'Every body received: stored postbacks by status, copies and rejected bodies by disposition.' });
    chart(outcomes, 'chart-outcomes', 'Postbacks per day by outcome', {
      type: 'bar', data: series(intake.rows, 'day', 'status', 'postbacks', (status) => statusNames[status] || status),
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });
    table(outcomes, { id: 'outcomes', caption: 'Postbacks by day and outcome', rows: intake.rows, columns: [
      { key: 'day', label: 'Day' }, { key: 'status', label: 'Outcome' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
    ] });

    const reasons = section(main, 'Rejected, by reason');
    table(reasons, { id: 'rejected', caption: 'Rejected bodies by reason', rows: rejected.rows, columns: [
      { key: 'reason', label: 'Reason' }, { key: 'postbacks', label: 'Bodies', kind: 'count' },
    ] });

    const protocols = section(main, 'Counted conversions per day by protocol');
    chart(protocols, 'chart-protocols', 'Counted conversions per day by protocol', {
      type: 'line', data: series(byDay.rows, 'day', 'protocol', 'postbacks', (name) => (name === 'aak' ? 'AdAttributionKit' : 'SKAdNetwork')),
      options: { scales: { y: { beginAtZero: true } } },
    });
    table(protocols, { id: 'protocols', caption: 'Counted conversions by day, protocol and currency', rows: byDay.rows, columns: [
      { key: 'day', label: 'Day' }, { key: 'protocol', label: 'Protocol' }, { key: 'currency', label: 'Currency' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'installs', label: 'Installs', kind: 'count' },
      { key: 're_engagements', label: 'Re-engagements', kind: 'count' },
    ] });

    const kinds = section(main, 'Installs and re-engagements per day');
    const days = [...new Set(byDay.rows.map((row) => row.day))].sort();
    chart(kinds, 'chart-installs', 'Installs and re-engagements per day', {
      type: 'bar',
      data: { labels: days, datasets: ['installs', 're_engagements'].map((key) => ({
        label: key === 'installs' ? 'Installs' : 'Re-engagements',
        data: days.map((day) => total(byDay.rows.filter((row) => row.day === day), key)),
      })) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });

    const tiers = section(main, 'Crowd-anonymity tiers', { note: 'The lowest tier each postback allows; the share without a conversion value per tier.' });
    const tierValues = [...new Set(byTier.rows.map((row) => row.tier))].sort((a, b) => a - b);
    chart(tiers, 'chart-tiers', 'Postbacks by crowd-anonymity tier', {
      type: 'doughnut',
      data: { labels: tierValues.map((tier) => `Tier ${tier}`), datasets: [{
        label: 'Postbacks', data: tierValues.map((tier) => total(byTier.rows.filter((row) => row.tier === tier), 'postbacks')),
        backgroundColor: ['#9aa5b1', '#1f5fbf', '#d9822b', '#2e9e5b', '#b3261e'],
      }] },
    });
    table(tiers, { id: 'tiers', caption: 'Postbacks by tier and currency', rows: byTier.rows, columns: [
      { key: 'tier', label: 'Tier', kind: 'count' }, { key: 'currency', label: 'Currency' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
      { key: 'share_without_value', label: 'Without a value', kind: 'share' },
    ] });
  },
};
