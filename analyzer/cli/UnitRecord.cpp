#include "UnitRecord.h"

namespace devcopy::cli {

namespace json = llvm::json;

static json::Value toJSON(const Position &p) {
  return json::Array{p.file, p.offset, p.line, p.column};
}

static bool fromJSON(const json::Value &v, Position &p, json::Path path) {
  const json::Array *a = v.getAsArray();
  if (!a || a->size() != 4) {
    path.report("expected [file, offset, line, column]");
    return false;
  }
  std::optional<llvm::StringRef> file = (*a)[0].getAsString();
  std::optional<int64_t> n[3] = {(*a)[1].getAsInteger(), (*a)[2].getAsInteger(),
                                 (*a)[3].getAsInteger()};
  for (auto &i : n)
    if (!i || *i < 0 || *i > UINT32_MAX)
      file.reset();
  if (!file) {
    path.report("expected [file, offset, line, column]");
    return false;
  }
  p = {file->str(), unsigned(*n[0]), unsigned(*n[1]), unsigned(*n[2])};
  return true;
}

static bool fromJSON(const json::Value &v, Range &r, json::Path path) {
  json::ObjectMapper o(v, path);
  return o && o.map("begin", r.begin) && o.map("end", r.end);
}

static json::Value toJSON(const std::vector<Range> &ranges) {
  json::Array out;
  for (const Range &r : ranges)
    out.push_back(
        json::Object{{"begin", toJSON(r.begin)}, {"end", toJSON(r.end)}});
  return out;
}

static bool fromJSON(const json::Value &v, Note &n, json::Path path) {
  json::ObjectMapper o(v, path);
  return o && o.map("where", n.where) && o.map("message", n.message) &&
         o.map("ranges", n.ranges) && o.map("end", n.end);
}

static bool fromJSON(const json::Value &v, Edit &e, json::Path path) {
  json::ObjectMapper o(v, path);
  int64_t length = 0;
  if (!(o && o.map("begin", e.begin) && o.map("end", e.end) &&
        o.map("length", length) && o.map("text", e.text) &&
        o.mapOptional("analysed", e.analysed)))
    return false;
  e.length = unsigned(length);
  return true;
}

static bool fromJSON(const json::Value &v, Finding &f, json::Path path) {
  json::ObjectMapper o(v, path);
  return o && o.map("rule", f.rule) && o.map("level", f.level) &&
         o.map("message", f.message) && o.map("where", f.where) &&
         o.map("end", f.end) && o.map("notes", f.notes) &&
         o.map("fixes", f.fixes) && o.map("ranges", f.ranges) &&
         o.map("warningAsError", f.warningAsError) &&
         o.map("directory", f.directory);
}

json::Value toJSON(const UnitRecord &record) {
  json::Array findings;
  for (const Finding &f : record.findings) {
    json::Array notes, fixes;
    for (const Note &n : f.notes)
      notes.push_back(json::Object{{"where", toJSON(n.where)},
                                   {"message", n.message},
                                   {"ranges", toJSON(n.ranges)},
                                   {"end", toJSON(n.end)}});
    for (const Edit &e : f.fixes)
      fixes.push_back(json::Object{{"begin", toJSON(e.begin)},
                                   {"end", toJSON(e.end)},
                                   {"length", e.length},
                                   {"text", e.text},
                                   {"analysed", e.analysed}});
    findings.push_back(json::Object{{"rule", f.rule},
                                    {"level", f.level},
                                    {"message", f.message},
                                    {"where", toJSON(f.where)},
                                    {"end", toJSON(f.end)},
                                    {"notes", std::move(notes)},
                                    {"fixes", std::move(fixes)},
                                    {"ranges", toJSON(f.ranges)},
                                    {"warningAsError", f.warningAsError},
                                    {"directory", f.directory}});
  }
  json::Value unitFacts = nullptr;
  if (record.facts) {
    // The facts file's own format, one unit long.
    llvm::Expected<json::Value> v =
        json::parse(facts::toJSON({{*record.facts}}));
    if (v)
      unitFacts = std::move(*v);
    else
      llvm::consumeError(v.takeError());
  }
  return json::Object{{"file", record.file},
                      {"findings", std::move(findings)},
                      {"facts", std::move(unitFacts)}};
}

llvm::Expected<UnitRecord> recordFromJSON(const json::Value &value) {
  UnitRecord record;
  json::Path::Root root("unit");
  json::ObjectMapper o(value, root);
  if (!(o && o.map("file", record.file) && o.map("findings", record.findings)))
    return root.getError();
  const json::Object *obj = value.getAsObject();
  if (const json::Value *f = obj->get("facts"); f && !f->getAsNull()) {
    std::string text;
    llvm::raw_string_ostream(text) << *f;
    llvm::Expected<facts::FactsFile> parsed = facts::parse(text);
    if (!parsed)
      return parsed.takeError();
    if (parsed->Units.size() != 1)
      return llvm::createStringError("unit facts: expected one unit, found %zu",
                                     parsed->Units.size());
    record.facts = std::move(parsed->Units.front());
  }
  return record;
}

json::Value toJSON(const ToolError &error) {
  return json::Object{{"file", error.file}, {"message", error.message}};
}

llvm::Expected<ToolError> toolErrorFromJSON(const json::Value &value) {
  ToolError error;
  json::Path::Root root("error");
  json::ObjectMapper o(value, root);
  if (!(o && o.map("file", error.file) && o.map("message", error.message)))
    return root.getError();
  return error;
}

} // namespace devcopy::cli
