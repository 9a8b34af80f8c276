/** A scheduled message that sending again cannot send: the schedule ends as failed with this reason. */
export class ScheduledSendRefusal extends Error {}
