import { describe, expect, it } from 'vitest';
import { ChangeFeed } from '../../src/service/change-feed.js';
import { record } from '../support/records.js';

describe('ChangeFeed', () => {
  it('drops the echo of its own writes from the store notifications, and nothing else', () => {
    const feed = new ChangeFeed();
    const heard: Array<[string | undefined, number | undefined]> = [];
    feed.subscribeAll((taskId, version) => heard.push([taskId, version]));
    feed.publish('a', 2);
    // Our own write coming back, at its version or an older one: no news.
    feed.publishRemote('a', 2);
    feed.publishRemote('a', 1);
    // A later version, a notification without one, another task: news.
    feed.publishRemote('a', 3);
    feed.publishRemote('a');
    feed.publishRemote('b', 1);
    // Versions heard from other processes are not remembered: a lease they give back keeps its version.
    feed.publishRemote('b', 1);
    expect(heard).toEqual([
      ['a', 2],
      ['a', 3],
      ['a', undefined],
      ['b', 1],
      ['b', 1],
    ]);
  });

  it('says a task is watched while a watch or a subscription of it is open, and not for every-task listeners', () => {
    const feed = new ChangeFeed();
    const stopAll = feed.subscribeAll(() => undefined);
    expect(feed.watched('a')).toBe(false);
    const watch = feed.watch('a');
    const stop = feed.subscribe('a', () => undefined);
    expect([feed.watched('a'), feed.watched('b')]).toEqual([true, false]);
    watch.close();
    expect(feed.watched('a')).toBe(true);
    stop();
    stopAll();
    expect(feed.watched('a')).toBe(false);
  });

  it('passes the task, version and carried record of each change to every-task listeners', () => {
    const feed = new ChangeFeed();
    const heard: unknown[] = [];
    feed.subscribeAll((...args) => heard.push(args));
    feed.publish('t', 4);
    const done = record({ taskId: 'u', version: 3, status: 'completed', result: { content: [] } });
    feed.publishRemote('u', 3, done);
    // Not terminal: a remote record is not passed on.
    feed.publishRemote('v', 2, record({ taskId: 'v', version: 2 }));
    feed.publishAll();
    expect(heard).toEqual([['t', 4, undefined], ['u', 3, done], ['v', 2, undefined], []]);
  });

  it("carries a remote change's record only when it is that change's terminal record, which a watch then answers from", async () => {
    const feed = new ChangeFeed();
    const heard: unknown[] = [];
    feed.subscribe('t', (version, carried) => heard.push([version, carried?.status]));
    const working = record({ taskId: 't', version: 2 });
    const done = record({ taskId: 't', version: 3, status: 'completed', result: { content: [] } });
    feed.publishRemote('t', 2, working);
    feed.publishRemote('t', 4, done);
    const watch = feed.watch('t');
    // A change without its record, then the terminal one: final, whatever came before it.
    feed.publishRemote('t', 2);
    feed.publishRemote('t', 3, done);
    expect(await watch.changed(1000)).toBe(done);
    feed.publishRemote('t', 2, working);
    expect(await watch.changed(1000)).toBe(null);
    watch.close();
    expect(heard).toEqual([
      [2, undefined],
      [4, undefined],
      [2, undefined],
      [3, 'completed'],
      [2, undefined],
    ]);
  });
});
