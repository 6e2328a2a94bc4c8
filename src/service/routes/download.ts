import { isoTime } from '../clock.js';
import type { ServiceCore } from '../core.js';
import { badRequest, rateLimited } from '../errors.js';
import { parseOffsetDateTime } from '../dates.js';
import { archiveZip } from '../mbox.js';
import type { Message } from '../model.js';
import { defineOp, FileResult, type Operation } from '../operation.js';
import type { Params } from '../params.js';
import { afterMsgNum } from '../msg-num.js';

/** Spec part 8: one archive download per person per group per 24 hours. */
export const DOWNLOAD_INTERVAL_MS = 24 * 3600 * 1000;

interface DownloadFilter {
  startMsgNum: number | undefined;
  startTime: number | undefined;
  /** `end_time`: ours, not the spec's (docs/protocol.md "Archive download"), sent by a public connector. */
  endTime: number | undefined;
}

/** A time parameter, or undefined when not given; a value that is not a time is `bad_request` naming it. */
function timeParam(params: Params, name: string): number | undefined {
  const text = params.string(name);
  if (text === undefined || text === '') return undefined;
  const time = parseOffsetDateTime(text);
  if (time === undefined) throw badRequest(`invalid ${name} format`);
  return time;
}

function downloadFilter(params: Params): DownloadFilter {
  // A bad start_msg_num is invalid_value naming the field (Params.integer); start_time has its own
  // bad_request text in spec 4.2. An empty value counts as not given, as for every other parameter.
  const startMsgNum = params.integer('start_msg_num', 0);
  return { startMsgNum, startTime: timeParam(params, 'start_time'), endTime: timeParam(params, 'end_time') };
}

/**
 * The messages the download holds, fixed when the call is answered: the slice is a copy of the list, so
 * messages posted while the zip is still streaming do not join it half-way.
 */
function selectMessages(all: readonly Message[], filter: DownloadFilter): Message[] {
  const selected = filter.startMsgNum === undefined ? all.slice() : afterMsgNum(all, filter.startMsgNum);
  const { startTime, endTime } = filter;
  return selected.filter((message) =>
    (startTime === undefined || message.created > startTime) && (endTime === undefined || message.created <= endTime));
}

/** Refuses the call when the caller already downloaded this group's archive within the interval. */
function checkDailyAllowance(core: ServiceCore, key: string, now: number): void {
  const last = core.store.archiveDownloads[key];
  if (last === undefined) return;
  const next = last + DOWNLOAD_INTERVAL_MS;
  if (now >= next) return;
  throw rateLimited((next - now) / 1000,
    `archive download allowed once per 24 hours; next allowed at ${isoTime(next)}`);
}

export const downloadOperations: Operation[] = [
  defineOp('downloadarchives', 'GET', ({ core, params, caller }) => {
    const scope = core.groupScope(params, caller);
    core.require(scope, 'download_archives');
    const filter = downloadFilter(params);
    const key = `${caller.user.id} ${scope.group.id}`;
    const now = core.now();
    checkDailyAllowance(core, key, now);

    // Only a call that will be answered with the file uses up the day's allowance: every check that can
    // refuse it has run above.
    core.store.archiveDownloads[key] = now;
    core.store.touch();
    core.activity.record(scope.group, 'archive_downloaded', caller.user, 'downloaded the archives');

    const messages = selectMessages(core.store.messagesByGroup.get(scope.group.id) ?? [], filter);
    const zip = archiveZip(core.store, scope.group, messages, now);
    return new FileResult(zip, 'application/zip', `${scope.group.name}.zip`);
  }),
];
