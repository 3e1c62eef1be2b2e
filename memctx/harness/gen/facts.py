"""The wording banks facts are planted with: statements and revisions per fact kind.

Statements and revisions come from per-kind template banks, English and Chinese, at least
eight of each per kind; questions, paraphrased questions and one-word questions are per topic
(:mod:`~memctx.harness.gen.topics`), values in :mod:`~memctx.harness.gen.values`. Templates
hold ``{subj}``
(the topic's subject phrase, ``{Subj}`` capitalised) and ``{val}``.
"""

from __future__ import annotations

__all__ = [
    "REVISIONS_EN",
    "REVISIONS_ZH",
    "STATEMENTS_EN",
    "STATEMENTS_ZH",
    "fill_template",
]


def fill_template(template: str, subj: str, val: str) -> str:
    cap = subj[:1].upper() + subj[1:]
    return template.replace("{Subj}", cap).replace("{subj}", subj).replace("{val}", val)


STATEMENTS_EN: dict[str, tuple[str, ...]] = {
    "config": (
        "Let's set {subj} to {val}.",
        "{Subj} should be {val} from now on.",
        "Heads-up: {subj} is {val} in every environment now.",
        "I've configured {subj} as {val}.",
        "For the record, {subj} = {val}.",
        "Please make {subj} {val}; the old default kept biting us.",
        "We agreed that {subj} will be {val}.",
        "Going with {val} for {subj}.",
        "Note for later: {subj} is {val}.",
        "Keep {subj} at {val}, ops asked for that explicitly.",
    ),
    "decision": (
        "We decided to go with {val} for {subj}.",
        "After comparing the options, {val} wins for {subj}.",
        "Final call: {subj} will be {val}.",
        "Decision made: {subj} is {val}.",
        "Let's standardise on {val} for {subj}.",
        "The team picked {val} for {subj}, so build around that.",
        "I'd rather not debate it again: {subj} is {val}.",
        "We're committing to {val} for {subj}.",
        "Signed off in the design review: {val} for {subj}.",
    ),
    "implementation": (
        "{Subj} lives in {val}.",
        "I implemented {subj} in {val}.",
        "FYI, {subj} is handled by {val}.",
        "{Subj} ended up in {val}.",
        "Look at {val} if you need {subj}.",
        "I wired {subj} through {val}.",
        "{Subj}: see {val}.",
        "The code for {subj} is {val}, in case you go looking.",
        "Implementation detail worth remembering: {subj} is {val}.",
    ),
    "issue": (
        "Found the cause: {subj} is {val}.",
        "Turns out {subj} is {val}.",
        "The thing we've been chasing, {subj}, is {val}.",
        "Root-caused it: {subj} comes down to {val}.",
        "Logging this so we don't lose it: {subj} is {val}.",
        "Confirmed after bisecting: {subj} is {val}.",
        "{Subj}? It's {val}.",
        "Known problem: {subj} is {val}.",
        "Writing it down for the postmortem: {subj} is {val}.",
    ),
    "task_state": (
        "Status update: {subj} is {val}.",
        "Right now {subj} is {val}.",
        "Where we are: {subj} is {val}.",
        "Progress note: {subj} is {val}.",
        "So you know, {subj} is {val}.",
        "Current state: {subj} = {val}.",
        "Quick status: {subj} is {val}, the rest is pending.",
        "Tracking: {subj} is {val}.",
        "For the handoff: {subj} is {val}.",
    ),
    "architecture": (
        "Architecturally, {subj} is {val}.",
        "The design is that {subj} is {val}.",
        "In the diagram, {subj} is {val}.",
        "Keep in mind {subj} is {val}; everything else talks to it.",
        "{Subj} is {val}, that's the backbone of the system.",
        "Per the architecture doc, {subj} is {val}.",
        "We split it so that {subj} is {val}.",
        "Big picture: {subj} is {val}.",
        "Structurally, {subj} is {val} and nothing bypasses it.",
    ),
}

STATEMENTS_ZH: dict[str, tuple[str, ...]] = {
    "config": (
        "把{subj}设成 {val}。",
        "{subj}以后统一用 {val}。",
        "提醒一下：{subj}现在是 {val}，所有环境都一样。",
        "我已经把{subj}配置成 {val} 了。",
        "记一下，{subj} = {val}。",
        "{subj}请改为 {val}，之前的默认值老出问题。",
        "我们约定{subj}就是 {val}。",
        "{subj}就定 {val} 吧。",
        "运维特别要求：{subj}保持 {val}。",
    ),
    "decision": (
        "我们决定{subj}用 {val}。",
        "比较了一圈，{subj}最后选 {val}。",
        "拍板了：{subj}采用 {val}。",
        "{subj}统一用 {val}，别再讨论了。",
        "团队选了 {val} 作为{subj}，按这个来做。",
        "设计评审通过了，{subj}就用 {val}。",
        "最终方案：{subj}是 {val}。",
        "{subj}确定是 {val}。",
    ),
    "implementation": (
        "{subj}写在 {val} 里。",
        "我把{subj}实现在 {val}。",
        "{subj}由 {val} 负责。",
        "{subj}的代码最后放在 {val}。",
        "需要{subj}的话看 {val}。",
        "{subj}是通过 {val} 做的。",
        "{subj}：见 {val}。",
        "顺便说一下，{subj}在 {val}。",
    ),
    "issue": (
        "找到原因了：{subj}是 {val}。",
        "原来{subj}是 {val}。",
        "一直在查的问题，{subj}，是 {val}。",
        "定位到了，{subj}就是 {val}。",
        "记下来免得忘：{subj}是 {val}。",
        "二分之后确认，{subj}是 {val}。",
        "{subj}？是 {val}。",
        "已知问题：{subj}是 {val}。",
    ),
    "task_state": (
        "进度更新：{subj}是 {val}。",
        "目前{subj}是 {val}。",
        "现在的状态：{subj}是 {val}。",
        "同步一下，{subj}是 {val}。",
        "当前{subj} = {val}。",
        "简单说下进度：{subj}是 {val}，其余待办。",
        "跟踪一下：{subj}是 {val}。",
        "现在{subj}停在 {val}。",
    ),
    "architecture": (
        "架构上，{subj}是 {val}。",
        "设计是这样的：{subj}是 {val}。",
        "架构图里{subj}是 {val}。",
        "记住{subj}是 {val}，其他组件都依赖它。",
        "{subj}是 {val}，这是整个系统的骨架。",
        "按架构文档，{subj}是 {val}。",
        "我们这样拆分：{subj}是 {val}。",
        "总体来看，{subj}是 {val}。",
    ),
}

REVISIONS_EN = (
    "Change of plan: {subj} is now {val}.",
    "Actually, switch {subj} to {val}.",
    "Scratch what I said earlier, {subj} becomes {val}.",
    "Update: we moved {subj} over to {val}.",
    "Correction: {subj} should be {val} instead.",
    "New info from the team, {subj} is {val} going forward.",
    "We reverted that; {subj} is {val} now.",
    "Overriding the earlier choice: {subj} = {val}.",
    "Small but important change: {subj} is {val} as of today.",
)

REVISIONS_ZH = (
    "计划有变：{subj}现在改成 {val}。",
    "其实{subj}还是换成 {val} 吧。",
    "之前说的作废，{subj}改为 {val}。",
    "更新一下：{subj}已经迁到 {val}。",
    "更正：{subj}应该是 {val}。",
    "团队刚通知，{subj}以后是 {val}。",
    "推翻之前的决定：{subj} = {val}。",
    "{subj}改了，现在是 {val}。",
)
