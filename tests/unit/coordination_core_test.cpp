// The coordination store's pure core (actors/coordination/coordination_core.hpp):
// what both the local and a simulated store rely on without a server. The
// ZooKeeper-facing semantics (rc order, multi results, sequential names,
// watches) are checked against a real ZooKeeper by
// tests/cluster/coordination_store_test.cpp; these are the parts only the
// core has: prepare/commit, session end, loading, the stored bytes.
#include <gtest/gtest.h>

#include "actors/coordination/coordination_core.hpp"

namespace caftx {
namespace {

TEST(CoordinationCore, ReturnCodesHaveZooKeepersNumbersAndNames) {
  EXPECT_EQ(static_cast<int>(zrc::ZOK), 0);
  EXPECT_EQ(static_cast<int>(zrc::ZRUNTIMEINCONSISTENCY), -2);
  EXPECT_EQ(static_cast<int>(zrc::ZCONNECTIONLOSS), -4);
  EXPECT_EQ(static_cast<int>(zrc::ZOPERATIONTIMEOUT), -7);
  EXPECT_EQ(static_cast<int>(zrc::ZINVALIDSTATE), -9);
  EXPECT_EQ(static_cast<int>(zrc::ZNONODE), -101);
  EXPECT_EQ(static_cast<int>(zrc::ZBADVERSION), -103);
  EXPECT_EQ(static_cast<int>(zrc::ZNOCHILDRENFOREPHEMERALS), -108);
  EXPECT_EQ(static_cast<int>(zrc::ZNODEEXISTS), -110);
  EXPECT_EQ(static_cast<int>(zrc::ZNOTEMPTY), -111);
  EXPECT_EQ(static_cast<int>(zrc::ZSESSIONEXPIRED), -112);
  EXPECT_EQ(to_string(zrc::ZBADVERSION), "ZBADVERSION");
  EXPECT_EQ(to_string(static_cast<zrc>(-999)), "ZUNKNOWN(-999)");
}

TEST(CoordinationCore, PathsFollowZooKeepersRules) {
  for (auto bad : {"", "a", "/a/", "/a//b", "/a/./b", "/a/../b"})
    EXPECT_FALSE(valid_znode_path(bad)) << bad;
  for (auto good : {"/", "/a", "/a/b-0000000001", "/.a"})
    EXPECT_TRUE(valid_znode_path(good)) << good;
  EXPECT_EQ(znode_parent("/a"), "/");
  EXPECT_EQ(znode_parent("/a/b"), "/a");
  EXPECT_EQ(znode_parent("/"), "");
  coordination_core core;
  auto p = core.prepare({coord_op::create_node("/q/", "", znode_sequential)}, 1, 0);
  EXPECT_EQ(p.rc, zrc::ZNONODE); // a sequential name may end in '/': its parent is /q
  p = core.prepare({coord_op::create_node("/", "")}, 1, 0);
  EXPECT_EQ(p.rc, zrc::ZBADARGUMENTS);
  p = core.prepare({coord_op::create_node("/x", "", 4)}, 1, 0); // ZOO_CONTAINER: not supported
  EXPECT_EQ(p.rc, zrc::ZBADARGUMENTS);
}

// prepare -> persist -> commit: nothing is visible before the commit.
TEST(CoordinationCore, APreparedWriteChangesNothingUntilCommitted) {
  coordination_core core;
  auto p = core.prepare({coord_op::create_node("/a", "x"), coord_op::create_node("/a/b", "y")},
                        1, 1000);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.zxid, 1);
  EXPECT_EQ(core.find("/a"), nullptr);
  EXPECT_EQ(core.last_zxid(), 0);
  ASSERT_EQ(p.changes.size(), 3u); // "/", "/a", "/a/b"
  core.commit(p);
  ASSERT_NE(core.find("/a/b"), nullptr);
  EXPECT_EQ(core.find("/a/b")->data, "y");
  EXPECT_EQ(core.find("/a")->stat.czxid, 1);
  EXPECT_EQ(core.find("/a")->stat.ctime, 1000);
  EXPECT_EQ(core.last_zxid(), 1);
  // A failed write hands out no zxid.
  auto dup = core.prepare({coord_op::create_node("/a", "")}, 1, 0);
  EXPECT_EQ(dup.rc, zrc::ZNODEEXISTS);
  EXPECT_EQ(dup.zxid, 0);
  EXPECT_TRUE(dup.changes.empty());
}

TEST(CoordinationCore, SessionEndDeletesOnlyThatSessionsEphemeralsAndFiresWatches) {
  coordination_core core;
  core.commit(core.prepare({coord_op::create_node("/nodes", "")}, 7, 0));
  core.commit(core.prepare({coord_op::create_node("/nodes/1", "", znode_ephemeral)}, 7, 0));
  core.commit(core.prepare({coord_op::create_node("/nodes/2", "", znode_ephemeral)}, 8, 0));
  std::vector<std::string> names;
  znode_stat st;
  ASSERT_EQ(core.get_children("/nodes", true, names, st), zrc::ZOK);
  std::string data;
  ASSERT_EQ(core.get("/nodes/1", true, data, st), zrc::ZOK);
  auto end = core.prepare_session_end(7);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end.zxid, 4);
  auto events = core.commit(end);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], std::make_pair(watch_event_type::deleted, std::string("/nodes/1")));
  EXPECT_EQ(events[1], std::make_pair(watch_event_type::child, std::string("/nodes")));
  EXPECT_EQ(core.find("/nodes/1"), nullptr);
  ASSERT_NE(core.find("/nodes/2"), nullptr);
  EXPECT_EQ(core.find("/nodes")->stat.pzxid, 4);
  // A session without ephemerals ends without a write.
  EXPECT_EQ(core.prepare_session_end(9).zxid, 0);
}

// Several sessions (the simulator's ZooKeeper) each hear their own
// watches, once, and a session that ends takes only its own watches along.
TEST(CoordinationCore, EachWatcherHearsItsOwnWatchesOnce) {
  coordination_core core;
  core.commit(core.prepare({coord_op::create_node("/nodes", "")}, 7, 0));
  std::vector<std::string> names;
  znode_stat st;
  std::string data;
  ASSERT_EQ(core.get_children("/nodes", true, names, st, 7), zrc::ZOK);
  ASSERT_EQ(core.get_children("/nodes", true, names, st, 8), zrc::ZOK);
  ASSERT_EQ(core.exists("/controller", true, st, 8), zrc::ZNONODE);
  ASSERT_EQ(core.exists("/controller", true, st, 9), zrc::ZNONODE);
  core.clear_watches(9);
  auto created = core.commit_watched(core.prepare(
    {coord_op::create_node("/nodes/1", "", znode_ephemeral),
     coord_op::create_node("/controller", "", znode_ephemeral)},
    7, 0));
  ASSERT_EQ(created.size(), 3u);
  EXPECT_EQ(created[0].watcher, 7);
  EXPECT_EQ(created[0].type, watch_event_type::child);
  EXPECT_EQ(created[0].path, "/nodes");
  EXPECT_EQ(created[1].watcher, 8);
  EXPECT_EQ(created[1].type, watch_event_type::child);
  EXPECT_EQ(created[2].watcher, 8);
  EXPECT_EQ(created[2].type, watch_event_type::created);
  EXPECT_EQ(created[2].path, "/controller");
  // One-shot: a second create fires nothing; a data watch and a listing
  // of the same znode by one watcher give one `deleted`.
  EXPECT_TRUE(core.commit_watched(core.prepare({coord_op::create_node("/nodes/2", "")}, 7, 0))
                .empty());
  ASSERT_EQ(core.get("/nodes/2", true, data, st, 7), zrc::ZOK);
  ASSERT_EQ(core.get_children("/nodes/2", true, names, st, 7), zrc::ZOK);
  ASSERT_EQ(core.get_children("/nodes/2", true, names, st, 8), zrc::ZOK);
  auto removed = core.commit_watched(core.prepare({coord_op::remove_node("/nodes/2")}, 7, 0));
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0].watcher, 7);
  EXPECT_EQ(removed[0].type, watch_event_type::deleted);
  EXPECT_EQ(removed[1].watcher, 8);
  EXPECT_EQ(removed[1].type, watch_event_type::deleted);
  EXPECT_EQ(removed[1].path, "/nodes/2");
}

// The cversion kept counts child creates (sequential names); the one read
// counts creates and deletes, as ZooKeeper's DataNode.copyStat reports it.
TEST(CoordinationCore, StoredCversionCountsCreatesAndTheReportedOneAlsoDeletes) {
  coordination_core core;
  core.commit(core.prepare({coord_op::create_node("/s", "")}, 1, 0));
  core.commit(core.prepare({coord_op::create_node("/s/a", ""), coord_op::create_node("/s/b", ""),
                            coord_op::remove_node("/s/a")},
                           1, 0));
  EXPECT_EQ(core.find("/s")->stat.cversion, 2);
  EXPECT_EQ(coordination_core::stat_of(*core.find("/s")).cversion, 3);
  EXPECT_EQ(coordination_core::stat_of(*core.find("/s")).num_children, 1);
  auto seq = core.prepare({coord_op::create_node("/s/n-", "", znode_sequential)}, 1, 0);
  EXPECT_EQ(seq.results.at(0).path, "/s/n-0000000002");
}

TEST(CoordinationCore, LoadingLinksChildrenWhateverTheOrder) {
  coordination_core core;
  znode child;
  child.data = "c";
  child.stat.czxid = 5;
  core.load("/a/b", child);
  znode parent;
  parent.stat.cversion = 1;
  core.load("/a", parent);
  core.set_last_zxid(5);
  std::vector<std::string> names;
  znode_stat st;
  ASSERT_EQ(core.get_children("/a", false, names, st), zrc::ZOK);
  EXPECT_EQ(names, std::vector<std::string>{"b"});
  EXPECT_EQ(st.num_children, 1);
  ASSERT_EQ(core.get_children("/", false, names, st), zrc::ZOK);
  EXPECT_EQ(names, std::vector<std::string>{"a"});
  auto p = core.prepare({coord_op::create_node("/z", "")}, 1, 0);
  EXPECT_EQ(p.zxid, 6);
}

// storage/FORMAT.md, "Coordination store": locked by its bytes.
TEST(CoordinationCore, ZnodeValueGoldenBytes) {
  znode n;
  n.data = "d";
  n.stat.czxid = 1;
  n.stat.mzxid = 2;
  n.stat.pzxid = 3;
  n.stat.ctime = 4;
  n.stat.mtime = 5;
  n.stat.version = 6;
  n.stat.cversion = 7;
  n.stat.aversion = 0;
  std::string expected("\x01", 1);
  for (int v : {1, 2, 3, 4, 5}) {
    expected.push_back(static_cast<char>(v));
    expected.append(7, '\0');
  }
  for (int v : {6, 7, 0}) {
    expected.push_back(static_cast<char>(v));
    expected.append(3, '\0');
  }
  expected += "d";
  auto bytes = encode_znode_value(n);
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(bytes.size(), 54u);
  auto back = decode_znode_value("znode/x", bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data, "d");
  EXPECT_EQ(back->stat, n.stat);
  auto bad = decode_znode_value("znode/x", bytes.substr(0, 20));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), error_code::kafka_storage_error);
  EXPECT_NE(bad.error().message().find("znode/x"), std::string::npos);
  EXPECT_EQ(encode_zxid_value(0x0102), std::string("\x02\x01\0\0\0\0\0\0", 8));
  EXPECT_EQ(*decode_zxid_value(std::string("\x02\x01\0\0\0\0\0\0", 8)), 0x0102);
  EXPECT_FALSE(decode_zxid_value("abc").ok());
}

} // namespace
} // namespace caftx
