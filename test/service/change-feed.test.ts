import { describe, expect, it } from 'vitest';
import { ChangeFeed } from '../../src/service/change-feed.js';

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

  it('passes the task and version of each change to every-task listeners', () => {
    const feed = new ChangeFeed();
    const heard: unknown[] = [];
    feed.subscribeAll((...args) => heard.push(args));
    feed.publish('t', 4);
    feed.publishAll();
    expect(heard).toEqual([['t', 4], []]);
  });
});
