// tauri-shell's page: starts runs, follows them over the plugin's channels, draws the live
// agent tree, answers commits, approvals and a run's spend limit, branches a reply and resumes
// runs an earlier session left unfinished. Every call goes through the plugin's typed guest API.

import { command, followRun, followRunUpdates } from 'tauri-plugin-tt-agent-api'

const CHAT_ID = 'harbour-chat'
const $ = (id) => document.getElementById(id)

/** The run the page follows, kept across a reload with the last seq it saw. */
const followed = JSON.parse(sessionStorage.getItem('followed') ?? 'null')
let current = null
let lastFinished = null
let messages = 0

function showError(err) {
  $('error').textContent = `${err.code ?? 'error'}: ${err.message ?? err}`
}

function remember(runId, lastSeq) {
  sessionStorage.setItem('followed', JSON.stringify({ runId, lastSeq }))
}

async function drawRuns() {
  const runs = await command('list_agent_runs', { limit: 20 })
  const list = $('runs')
  list.replaceChildren()
  for (const run of runs) {
    const item = document.createElement('li')
    item.dataset.runId = run.id
    item.dataset.status = run.status
    item.textContent = `${run.id} ${run.status}${run.forkedFrom ? ' (branch)' : ''} `
    const resumable = ['interrupted', 'cancelled', 'failed'].includes(run.status) && !run.abandonedAt
    if (resumable) {
      const resume = document.createElement('button')
      resume.textContent = 'Resume'
      resume.dataset.testid = 'resume'
      resume.onclick = () => act(async () => follow((await command('resume_agent_run', { runId: run.id })).id, 0))
      item.append(resume)
    }
    list.append(item)
  }
}

async function drawTree(runId) {
  const graph = await command('read_agent_timeline', { runId })
  const children = new Map()
  for (const inv of graph.invocations) {
    const siblings = children.get(inv.parentInvocationId) ?? []
    siblings.push(inv)
    children.set(inv.parentInvocationId, siblings)
  }
  const lines = []
  const walk = (parent, depth) => {
    for (const inv of children.get(parent) ?? []) {
      lines.push(`${'  '.repeat(depth)}${inv.profileId} [${inv.status}]`)
      walk(inv.invocationId, depth + 1)
    }
  }
  walk(null, 0)
  $('tree').textContent = lines.join('\n')
}

function requestBox(title, body, buttons) {
  const box = document.createElement('div')
  box.className = 'request'
  const heading = document.createElement('strong')
  heading.textContent = title
  const text = document.createElement('pre')
  text.textContent = body
  box.append(heading, text)
  for (const [label, testid, onclick] of buttons) {
    const button = document.createElement('button')
    button.textContent = label
    button.dataset.testid = testid
    button.onclick = () => act(async () => {
      box.remove()
      await onclick()
    })
    box.append(button)
  }
  $('requests').append(box)
}

async function showCommits(runId) {
  for (const commit of await command('list_agent_chat_commits', { runId })) {
    if (document.querySelector(`[data-commit="${commit.commitId}"]`)) continue
    requestBox(`Publish ${commit.path}?`, commit.content, [
      ['Publish', 'publish', async () => {
        messages += 1
        const message = document.createElement('div')
        message.className = 'message'
        message.dataset.testid = 'message'
        message.textContent = commit.content
        $('chat').append(message)
        await command('resolve_agent_chat_commit', { runId, commitId: commit.commitId, messageId: `msg-${messages}` })
      }],
      ['Refuse', 'refuse', () => command('resolve_agent_chat_commit', { runId, commitId: commit.commitId, error: 'The user refused it.' })]
    ])
    document.querySelector('#requests .request:last-child').dataset.commit = commit.commitId
  }
}

async function showApprovals(runId) {
  for (const call of await command('list_agent_tool_approvals', { runId })) {
    if (document.querySelector(`[data-approval="${call.approvalId}"]`)) continue
    requestBox(`Allow ${call.tool}?`, JSON.stringify(call.arguments, null, 2), [
      ['Approve', 'approve', () => command('approve_agent_tool_call', { runId, approvalId: call.approvalId, decision: 'approve' })],
      ['Deny', 'deny', () => command('approve_agent_tool_call', { runId, approvalId: call.approvalId, decision: 'deny', message: 'Not now.' })]
    ])
    document.querySelector('#requests .request:last-child').dataset.approval = call.approvalId
  }
}

/** Dollars with four decimals, or two significant digits below a hundredth of a cent. */
const usd = (amount) => `$${amount !== 0 && amount < 0.0001 ? amount.toPrecision(2) : amount.toFixed(4)}`

async function showSpendLimit(runId) {
  const limit = await command('read_agent_spend_limit', { runId })
  if (!limit || document.querySelector('[data-spend-limit]')) return
  const raised = Math.max(1, limit.spentUsd * 2)
  requestBox(`Spent ${usd(limit.spentUsd)} of ${usd(limit.limitUsd)}. Go on?`, 'No agent calls its model until you answer.', [
    [`Raise the limit to ${usd(raised)}`, 'raise', () => command('answer_agent_spend_limit', { runId, decision: 'raise', limitUsd: raised })],
    ['Stop here', 'stop-spending', () => command('answer_agent_spend_limit', { runId, decision: 'refuse' })]
  ])
  document.querySelector('#requests .request:last-child').dataset.spendLimit = runId
}

async function onEvent(runId, event) {
  remember(runId, event.seq)
  const item = document.createElement('li')
  item.value = event.seq
  item.textContent = event.type
  $('events').append(item)
  if (event.type.startsWith('agent_invocation_') || event.type.startsWith('agent_task_')) {
    await drawTree(runId)
  }
  switch (event.type) {
    case 'chat_commit_requested':
      await showCommits(runId)
      break
    case 'tool_approval_requested':
      await showApprovals(runId)
      break
    case 'spend_limit_reached':
      await showSpendLimit(runId)
      break
    case 'persistent_state_metadata_update_requested':
      // Binds the run's saved state to its last message; this chat keeps no such binding.
      await command('resolve_agent_persistent_state_metadata_update', { runId, updateId: event.payload.updateId })
      break
  }
}

/** Follows a run from `afterSeq`, one event at a time, in order. */
async function follow(runId, afterSeq) {
  if (current) await current.close()
  if (afterSeq === 0) $('events').replaceChildren()
  $('status').textContent = `following ${runId}`
  remember(runId, afterSeq)
  let queue = Promise.resolve()
  // Through resumes: a resumed run's journal holds its earlier end (`run_interrupted`).
  current = await followRun({ runId, afterSeq, throughResumes: true }, {
    onEvent: (event) => { queue = queue.then(() => onEvent(runId, event)).catch(showError) },
    onEnd: () => {
      queue = queue.then(async () => {
        const run = await command('read_agent_run', { runId })
        $('status').textContent = `${runId} ${run.status}`
        $('status').dataset.status = run.status
        if (run.status === 'completed' && !run.forkedFrom) {
          lastFinished = run
          $('branch').disabled = false
        }
        await drawTree(runId)
      }).catch(showError)
    },
    onError: showError
  })
  await drawTree(runId)
}

async function act(step) {
  try {
    $('error').textContent = ''
    await step()
  } catch (err) {
    showError(err)
  }
}

async function writeScene(profileId) {
  const run = await command('start_agent_run', {
    stableChatId: CHAT_ID,
    userRequest: 'Write the next scene.',
    profileId,
    history: [{ role: 'user', content: 'Set it at the harbour.' }]
  })
  await follow(run.id, 0)
}

$('start').onclick = () => act(() => writeScene('shell-writer'))

$('start-budgeted').onclick = () => act(() => writeScene('shell-writer-budgeted'))

$('start-long').onclick = () => act(async () => {
  const run = await command('start_agent_run', {
    stableChatId: CHAT_ID,
    userRequest: 'Take your time. [hold]',
    profileId: 'shell-writer'
  })
  await follow(run.id, 0)
})

$('branch').onclick = () => act(async () => {
  const branch = await command('fork_agent_run', {
    runId: lastFinished.id,
    at: { kind: 'agentRound', invocationId: 'inv_root', round: 4 },
    changes: { guidance: 'Make the ending quieter. [second take]' }
  })
  $('branch').disabled = true
  await follow(branch.id, 0)
})

act(async () => {
  await followRunUpdates((message) => { if (message.kind !== 'end') act(drawRuns) })
  await drawRuns()
  // After a reload: the same run, from the last seq this page saw, so nothing is missed or
  // shown twice.
  if (followed) await follow(followed.runId, followed.lastSeq)
  else $('status').textContent = 'ready'
})
