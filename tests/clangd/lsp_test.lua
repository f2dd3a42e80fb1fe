-- End-to-end test of devcopy-clangd through Neovim's built-in LSP client:
-- open a fixture, check every devcopy diagnostic against the fixture's caret
-- annotations and every quick fix's title (a few words), apply one
-- diagnostic's quick fix, check that it is gone.
--
--   nvim --headless -u NONE -c 'luafile lsp_test.lua'
--
-- The client is started by the Neovim snippet of README.md (DEVCOPY_README),
-- extracted and run as a user's ftplugin would run it.
--
-- Environment: DEVCOPY_CLANGD (server), DEVCOPY_LSP_FILE (fixture),
-- DEVCOPY_LSP_CDB (directory holding compile_commands.json), DEVCOPY_README, optional
-- DEVCOPY_LSP_MUTATE=range|missing (corrupt the expectations: the test must
-- then fail; ctest checks that it does, so the assertions are known to bite),
-- optional DEVCOPY_LSP_EXPECT: a file of `<check> <line>:<col>` lines (what
-- clang-tidy reports for a file that cannot carry annotations, an example):
-- each must then lie inside one published range of that check, every devcopy
-- diagnostic must be claimed, and there is no fix step. DEVCOPY_LSP_TIMEOUT_MS
-- bounds each wait (default 60000).
--
-- Annotations: a comment line whose carets sit under the reported range of
-- the line above it, then the check name, and `fix` for the one to apply:
--     x.to(device);
--   //^^^^^^^^^^^^ devcopy-discarded-copy fix
-- Diagnostics whose code starts with `devcopy-` must match the annotations
-- exactly (no missing, no extra, same ranges); others are ignored.

-- A real <torch/torch.h> preamble on a loaded 2-core machine can take minutes.
local TIMEOUT_MS = tonumber(os.getenv('DEVCOPY_LSP_TIMEOUT_MS') or '') or 60000
local failures = 0

local function log(msg) io.stdout:write(msg .. '\n'); io.stdout:flush() end
local function fail(msg) failures = failures + 1; log('FAIL: ' .. msg) end

local function env(name, default)
  local v = os.getenv(name)
  if v == nil or v == '' then
    if default ~= nil then return default end
    error('lsp_test: environment variable ' .. name .. ' is not set')
  end
  return v
end

-- 0-based LSP range as "line:col-line:col" in 1-based editor coordinates.
local function fmt_range(r)
  return string.format('%d:%d-%d:%d', r.start.line + 1, r.start.character + 1,
                       r['end'].line + 1, r['end'].character + 1)
end

local function key(code, range) return code .. ' @ ' .. fmt_range(range) end

-- Set when the expectations are positions (DEVCOPY_LSP_EXPECT): clang-tidy
-- reports a point, clangd a range, which must contain it.
local points = false
local function fmt_point(p) return string.format('%d:%d', p.line + 1, p.character + 1) end
local function before(a, b) return a.line < b.line or (a.line == b.line and a.character < b.character) end
local function contains(range, p) return not before(p, range.start) and before(p, range['end']) end

-- Reads `<check> <line>:<col>` lines (1-based) from a file.
local function point_expectations(path)
  local out = {}
  for text in io.lines(path) do
    local code, line, col = text:match('^(devcopy%-[%w%-]+) (%d+):(%d+)$')
    assert(code, 'lsp_test: bad line in ' .. path .. ': ' .. text)
    out[#out + 1] = { code = code, fix = false, range = {
      start = { line = tonumber(line) - 1, character = tonumber(col) - 1 } } }
  end
  return out
end

-- Reads the caret annotations from the buffer's lines.
local function expectations(lines)
  local out = {}
  for i, text in ipairs(lines) do
    local lead, carets, code, rest = text:match('^(%s*//%s*)(%^+)%s+(devcopy%-[%w%-]+)(.*)$')
    if lead then
      assert(i > 1, 'annotation on the first line has no code line above it')
      local col = #lead -- 0-based column of the first caret
      out[#out + 1] = {
        code = code,
        fix = rest:match('%f[%w]fix%f[%W]') ~= nil,
        range = { start = { line = i - 2, character = col },
                  ['end'] = { line = i - 2, character = col + #carets } },
      }
    end
  end
  return out
end

local function mutate(expected, how)
  if how == 'range' then
    local r = expected[1].range
    r['end'] = { line = r['end'].line, character = r['end'].character + 1 }
  elseif how == 'missing' then
    table.insert(expected, { code = 'devcopy-not-a-check', fix = false,
      range = expected[1].range })
  elseif how ~= '' then
    error('lsp_test: unknown DEVCOPY_LSP_MUTATE=' .. how)
  end
end

local function is_devcopy(d) return type(d.code) == 'string' and d.code:match('^devcopy%-') end

-- Pairs each expected point with a diagnostic of that check covering it.
local function compare_points(what, expected, diags)
  local used = {}
  for _, e in ipairs(expected) do
    local found
    for i, d in ipairs(diags) do
      if not used[i] and is_devcopy(d) and d.code == e.code and contains(d.range, e.range.start) then
        found = i; break
      end
    end
    if found then used[found] = true
    else fail(what .. ': missing diagnostic ' .. e.code .. ' covering ' .. fmt_point(e.range.start)) end
  end
  for i, d in ipairs(diags) do
    if is_devcopy(d) and not used[i] then fail(what .. ': unexpected diagnostic ' .. key(d.code, d.range)) end
  end
end

-- Compares devcopy diagnostics with the expectations as multisets.
local function compare(what, expected, diags)
  if points then return compare_points(what, expected, diags) end
  local want, got = {}, {}
  for _, e in ipairs(expected) do local k = key(e.code, e.range); want[k] = (want[k] or 0) + 1 end
  for _, d in ipairs(diags) do
    if is_devcopy(d) then
      local k = key(d.code, d.range); got[k] = (got[k] or 0) + 1
    end
  end
  for k, n in pairs(want) do
    if (got[k] or 0) < n then fail(what .. ': missing diagnostic ' .. k) end
  end
  for k, n in pairs(got) do
    if (want[k] or 0) < n then fail(what .. ': unexpected diagnostic ' .. k) end
  end
end

-- The Lua block that follows the `neovim-snippet` marker in README.md.
local function readme_snippet(readme)
  local text = table.concat(vim.fn.readfile(readme), '\n')
  local marker = text:find('<!-- neovim-snippet', 1, true)
  assert(marker, 'lsp_test: no neovim-snippet marker in ' .. readme)
  local body = text:match('```lua\n(.-)\n```', marker)
  assert(body, 'lsp_test: no ```lua block after the marker in ' .. readme)
  return body
end

-- The clients attached to a buffer, on Neovim 0.7 as on current versions.
local function clients_of(bufnr)
  if vim.lsp.get_clients then return vim.lsp.get_clients({ bufnr = bufnr }) end
  return vim.tbl_values(vim.lsp.buf_get_clients(bufnr))
end

local function run()
  local server = env('DEVCOPY_CLANGD')
  local file = env('DEVCOPY_LSP_FILE')
  local cdb = env('DEVCOPY_LSP_CDB')

  -- Latest publishDiagnostics per document version.
  local published = {}
  vim.lsp.handlers['textDocument/publishDiagnostics'] = function(_, result)
    published[result.version or -1] = result.diagnostics
  end

  -- The client comes from the README's own snippet, run as the ftplugin it
  -- is meant for (the fixture's buffer current); only its placeholder path
  -- becomes the server under test, with the test's compile database.
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local placeholder = "'/usr/bin/devcopy-clangd'"
  local snippet = readme_snippet(env('DEVCOPY_README'))
  local at = snippet:find(placeholder, 1, true)
  assert(at, 'lsp_test: the README snippet no longer names ' .. placeholder)
  local cmd = string.format('%q, %q, %q, %q', server, '--compile-commands-dir=' .. cdb,
                            '--background-index=false', '--log=error')
  snippet = snippet:sub(1, at - 1) .. cmd .. snippet:sub(at + #placeholder)
  assert(loadstring(snippet, '=README.md snippet'))()

  local client
  vim.wait(TIMEOUT_MS, function()
    for _, c in ipairs(clients_of(bufnr)) do
      if c.name == 'devcopy-clangd' then client = c end
    end
    return client ~= nil
  end, 20)
  assert(client, 'the README snippet attached no devcopy-clangd client to ' .. file)
  log('README snippet attached client ' .. client.id .. ' (root ' .. tostring(client.config.root_dir) .. ')')

  local function diagnostics_for_current_version(what)
    -- The version is known once the client has sent didOpen/didChange.
    local function current()
      local version = vim.lsp.util.buf_versions[bufnr]
      return version and published[version]
    end
    if not vim.wait(TIMEOUT_MS, function() return current() ~= nil end, 20) then
      error(what .. ': no publishDiagnostics for the buffer version '
            .. tostring(vim.lsp.util.buf_versions[bufnr]) .. ' within ' .. TIMEOUT_MS .. ' ms')
    end
    return current()
  end

  local expected
  local expect_file = env('DEVCOPY_LSP_EXPECT', '')
  if expect_file ~= '' then
    points = true
    expected = point_expectations(expect_file)
  else
    expected = expectations(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
  end
  assert(#expected > 0, 'no expected diagnostic: nothing to test')
  mutate(expected, env('DEVCOPY_LSP_MUTATE', ''))

  local diags = diagnostics_for_current_version('after open')
  log(string.format('after open: %d diagnostics', #diags))
  for _, d in ipairs(diags) do log('  ' .. key(tostring(d.code), d.range) .. ': ' .. d.message) end
  compare('after open', expected, diags)

  -- Each quick fix says the fix in a few words, never the whole warning.
  for _, d in ipairs(diags) do
    if is_devcopy(d) then
      local reply = client.request_sync('textDocument/codeAction', {
        textDocument = { uri = vim.uri_from_bufnr(bufnr) },
        range = d.range,
        context = { diagnostics = { d }, only = { 'quickfix' } },
      }, TIMEOUT_MS, bufnr)
      for _, a in ipairs((reply and reply.result) or {}) do
        if a.kind == 'quickfix' then
          log('  quick fix for ' .. d.code .. ': ' .. a.title)
          if #a.title > 80 then
            fail('quick fix title of ' .. key(d.code, d.range) .. ' has ' .. #a.title
                 .. ' characters: ' .. a.title)
          end
        end
      end
    end
  end

  if points then
    client.stop()
    return
  end

  -- The diagnostic to fix: the first annotation marked `fix`.
  local target
  for _, e in ipairs(expected) do if e.fix then target = e; break end end
  assert(target, 'no annotation is marked fix')
  local diag
  for _, d in ipairs(diags) do
    if d.code == target.code and vim.deep_equal(d.range, target.range) then diag = d end
  end
  if not diag then
    fail('the diagnostic to fix was not published: ' .. key(target.code, target.range))
    return
  end

  local reply, err = client.request_sync('textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = diag.range,
    context = { diagnostics = { diag }, only = { 'quickfix' } },
  }, TIMEOUT_MS, bufnr)
  if not reply or reply.err then
    error('codeAction failed: ' .. vim.inspect(err or reply.err))
  end
  local action
  for _, a in ipairs(reply.result or {}) do
    if a.edit and a.kind == 'quickfix' then action = a; break end
  end
  if not action then
    fail('no quick fix offered for ' .. key(target.code, target.range))
    return
  end
  log('applying: ' .. action.title)
  vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)

  local fixed_line = vim.api.nvim_buf_get_lines(bufnr, target.range.start.line,
                                                 target.range.start.line + 1, false)[1]
  log('fixed line: ' .. fixed_line)
  local after = diagnostics_for_current_version('after the fix')
  log(string.format('after the fix: %d diagnostics', #after))
  for _, d in ipairs(after) do log('  ' .. key(tostring(d.code), d.range) .. ': ' .. d.message) end
  -- Every other finding stays; the fixed one is gone. A fix-it edits within
  -- its line, so the others keep their ranges.
  local rest = {}
  for _, e in ipairs(expected) do if e ~= target then rest[#rest + 1] = e end end
  compare('after the fix', rest, after)
  for _, d in ipairs(after) do
    if d.code == target.code and d.range.start.line == target.range.start.line then
      fail('the fixed diagnostic is still there: ' .. key(d.code, d.range))
    end
  end

  client.stop()
end

local ok, err = pcall(run)
if not ok then fail(tostring(err)) end
if failures == 0 then
  log('PASS')
  vim.cmd('qall!')
else
  log(string.format('%d failure(s)', failures))
  vim.cmd('cquit 1')
end
