import { CniError, CniErrorCode, type CniPlugin, ignoreNotFound, requireNetns } from '@kemu/cni';

export const loopback: CniPlugin = {
  name: 'kemu-loopback',

  async add(ctx) {
    const dp = await ctx.datapath();
    await requireNetns(dp, ctx.netns);
    await dp.setLink(ctx.netns, 'lo', { up: true });
    const lo = await dp.getLink(ctx.netns, 'lo');
    const addrs = (await dp.listAddrs(ctx.netns, 'lo')).filter((a) => a.scope === 'host');
    const ips = addrs.map((a) => ({ interface: 0, address: a.cidr }));
    if (ctx.prevResult) return ctx.prevResult;
    return {
      cniVersion: ctx.version,
      interfaces: [{ name: 'lo', mac: lo?.mac ?? '00:00:00:00:00:00', sandbox: ctx.netns }],
      ips,
      dns: {},
    };
  },

  async del(ctx) {
    if (!ctx.netns) return;
    const dp = await ctx.datapath();
    // Nothing to undo when the namespace is already gone.
    if (!(await dp.netnsExists(ctx.netns))) return;
    await ignoreNotFound(() => dp.setLink(ctx.netns, 'lo', { up: false }));
  },

  async check(ctx) {
    const dp = await ctx.datapath();
    const lo = await dp.getLink(ctx.netns, 'lo');
    if (!lo?.up) throw new CniError(CniErrorCode.CheckFailed, `loopback interface is down in ${ctx.netns}`);
  },
};
