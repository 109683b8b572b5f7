#include "runtime/coordination_types.hpp"

namespace caftx {

std::string to_string(zrc rc) {
  switch (rc) {
#define CAFTX_ZRC(name)                                                                            \
  case zrc::name:                                                                                  \
    return #name;
    CAFTX_ZRC(ZOK)
    CAFTX_ZRC(ZSYSTEMERROR)
    CAFTX_ZRC(ZRUNTIMEINCONSISTENCY)
    CAFTX_ZRC(ZDATAINCONSISTENCY)
    CAFTX_ZRC(ZCONNECTIONLOSS)
    CAFTX_ZRC(ZMARSHALLINGERROR)
    CAFTX_ZRC(ZUNIMPLEMENTED)
    CAFTX_ZRC(ZOPERATIONTIMEOUT)
    CAFTX_ZRC(ZBADARGUMENTS)
    CAFTX_ZRC(ZINVALIDSTATE)
    CAFTX_ZRC(ZAPIERROR)
    CAFTX_ZRC(ZNONODE)
    CAFTX_ZRC(ZNOAUTH)
    CAFTX_ZRC(ZBADVERSION)
    CAFTX_ZRC(ZNOCHILDRENFOREPHEMERALS)
    CAFTX_ZRC(ZNODEEXISTS)
    CAFTX_ZRC(ZNOTEMPTY)
    CAFTX_ZRC(ZSESSIONEXPIRED)
    CAFTX_ZRC(ZINVALIDCALLBACK)
    CAFTX_ZRC(ZINVALIDACL)
    CAFTX_ZRC(ZAUTHFAILED)
    CAFTX_ZRC(ZCLOSING)
    CAFTX_ZRC(ZNOTHING)
    CAFTX_ZRC(ZSESSIONMOVED)
    CAFTX_ZRC(ZNOTREADONLY)
    CAFTX_ZRC(ZEPHEMERALONLOCALSESSION)
    CAFTX_ZRC(ZNOWATCHER)
    CAFTX_ZRC(ZRECONFIGDISABLED)
    CAFTX_ZRC(ZTHROTTLEDOP)
#undef CAFTX_ZRC
  }
  return "ZUNKNOWN(" + std::to_string(static_cast<int32_t>(rc)) + ")";
}

const char* to_string(watch_event_type t) {
  switch (t) {
    case watch_event_type::created:
      return "created";
    case watch_event_type::deleted:
      return "deleted";
    case watch_event_type::changed:
      return "changed";
    case watch_event_type::child:
      return "child";
  }
  return "unknown";
}

const char* to_string(session_state s) {
  switch (s) {
    case session_state::connecting:
      return "connecting";
    case session_state::connected:
      return "connected";
    case session_state::expired:
      return "expired";
    case session_state::closed:
      return "closed";
  }
  return "unknown";
}

bool valid_znode_path(const std::string& path) {
  if (path.empty() || path[0] != '/')
    return false;
  if (path == "/")
    return true;
  if (path.back() == '/')
    return false;
  size_t start = 1;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string::npos)
      end = path.size();
    auto part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos)
      return false;
    start = end + 1;
  }
  return true;
}

std::string znode_parent(const std::string& path) {
  if (path == "/" || path.empty())
    return {};
  auto pos = path.rfind('/');
  return pos == 0 ? std::string("/") : path.substr(0, pos);
}

} // namespace caftx
