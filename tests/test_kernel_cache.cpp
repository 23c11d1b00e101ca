// KernelKey (layout, text form, hash) and the in-memory KernelCache (counts, single flight,
// LRU eviction, failures).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "cache/kernel_key.hpp"
#include "jit/coiter_spec.hpp"
#include "sparsejit_build_info.hpp"
#include "src/build_id.hpp"
#include "src/error.hpp"

namespace sj::cache {
namespace {

KernelKey plan_key(uint64_t detail) {
  KernelKey k = KernelKey::make(KeyKind::Plan);
  k.op = SJ_OP_SPGEMM;
  k.semiring = SJ_SEMIRING_PLUS_TIMES;
  k.schedule = SJ_SCHEDULE_GUSTAVSON_HASH;
  k.formats[0] = KeyFormat::Csr;
  k.formats[1] = KeyFormat::Csc;
  k.out_format = KeyFormat::Csr;
  k.detail = detail;
  return k;
}

std::shared_ptr<const void> int_value(int v) { return std::make_shared<const int>(v); }
int as_int(const std::shared_ptr<const void>& p) { return *static_cast<const int*>(p.get()); }

TEST(KernelCache, KeyIsPlainDataWithVersionAndBuild) {
  KernelKey k = KernelKey::make(KeyKind::Coiter);
  EXPECT_STREQ(k.version, SPARSEJIT_VERSION_STRING);
  EXPECT_STREQ(k.build_id, sj::kBuildId);
  EXPECT_TRUE(k.is_current_build());
  // The bytes after the strings are zero (file names and hashes depend on every byte).
  for (size_t i = std::strlen(k.build_id); i < sizeof k.build_id; ++i) ASSERT_EQ(k.build_id[i], 0);
  KernelKey copy;
  std::memcpy(&copy, &k, sizeof k);
  EXPECT_EQ(copy, k);
  EXPECT_EQ(copy.hash(), k.hash());
  KernelKey other = k;
  std::memcpy(other.build_id, "another-build", 14);
  EXPECT_FALSE(other.is_current_build());
  EXPECT_NE(other.hash(), k.hash());
  EXPECT_EQ(other.with_current_build(), k);
}

TEST(KernelCache, KeyRoundTripThroughTextForEveryCoiterSpec) {
  int n = 0;
  for (int action = 0; action < 3; ++action)
    for (IndexType index : {IndexType::I32, IndexType::I64})
      for (ValueType value : {ValueType::F32, ValueType::F64})
        for (int width : {4, 8, 16})
          for (int phases = 0; phases < 8; ++phases)
            for (int method = 0; method < 3; ++method)
              for (sj_isa isa : {SJ_ISA_AVX512, SJ_ISA_AVX2, SJ_ISA_SCALAR}) {
                jit::CoiterSpec s;
                s.action = jit::CoiterAction(action);
                s.index = index;
                s.value = value;
                s.width = uint8_t(width);
                s.phases = uint8_t(phases);
                s.method = jit::CoiterMethod(method);
                s.isa = isa;
                s.semiring = sj_semiring((n++) % 5);
                s.reassociate = n % 2;
                s.skip_empty = n % 3 == 0;
                s.skip_disjoint = n % 5 == 0;
                s.with_factor = n % 7 == 0;
                KernelKey k = KernelKey::for_coiter(s);
                std::string text = k.to_string();
                KernelKey back = KernelKey::parse(text);
                ASSERT_EQ(back, k) << text;
                ASSERT_EQ(back.hash(), k.hash());
                ASSERT_EQ(back.to_string(), text);
                ASSERT_EQ(back.coiter_spec(), s) << text;
              }
  EXPECT_GT(n, 1000);
}

TEST(KernelCache, KeyRoundTripForPlanKeysAndLooseText) {
  KernelKey k = plan_key(0xdeadbeef12345ull);
  k.flags = kKeyTransposeB | kKeyDenseOutput;
  k.isa_features = kFeatureAvx2 | kFeatureAvx512;
  k.width = 8;
  k.phases = 1;
  std::string text = k.to_string();
  EXPECT_NE(text.find("plan op=spgemm"), std::string::npos) << text;
  EXPECT_NE(text.find("formats=csr,csc,-"), std::string::npos) << text;
  EXPECT_NE(text.find("flags=transpose-b,dense-output"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string("build=") + sj::kBuildId), std::string::npos) << text;
  EXPECT_EQ(KernelKey::parse(text), k);
  // The file name is the kind and the hash: stable, bounded, no odd characters.
  EXPECT_EQ(k.file_name().size(), std::string("plan-0123456789abcdef.sje").size());
  EXPECT_EQ(k.file_name().rfind("plan-", 0), 0u);

  // Manifest lines may give fields in any order, leave defaults out and omit the build.
  KernelKey loose = KernelKey::parse("  coiter   width=8 action=emit\tindex=i64 ");
  jit::CoiterSpec want;
  want.action = jit::CoiterAction::Emit;
  want.index = IndexType::I64;
  want.width = 8;
  EXPECT_EQ(loose.coiter_spec(), want);
  EXPECT_TRUE(loose.is_current_build());
  // A key from another build parses as that build (the warm-up tool rebases it).
  KernelKey old = KernelKey::parse("coiter version=0.0.9 build=old");
  EXPECT_FALSE(old.is_current_build());
  EXPECT_TRUE(old.with_current_build().is_current_build());

  // A NUL or control byte in a free-text field would not print back the same (found by fuzzing).
  for (std::string bad : {std::string("plan build=ab\0cd", 17), std::string("coiter version=1.\x05")}) {
    try {
      KernelKey::parse(bad);
      ADD_FAILURE() << "parsed a key with a control byte";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), SJ_ERR_PARSE);
      EXPECT_NE(std::string(e.what()).find("printable ASCII"), std::string::npos) << e.what();
    }
  }
  for (const char* bad : {"", "kernel op=spgemm", "coiter width", "coiter width=x", "coiter phases=012",
                          "coiter op=fft", "coiter formats=csr,zzz", "coiter flags=fast", "coiter colour=red",
                          "coiter detail=xyz", "plan build=0123456789012345678901234567890123456789012345678"}) {
    try {
      KernelKey::parse(bad);
      ADD_FAILURE() << "parsed '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), SJ_ERR_PARSE) << bad;
      EXPECT_NE(std::string(e.what()).find("kernel key"), std::string::npos) << e.what();
    }
  }
}

TEST(KernelCache, EveryFieldChangesTheHash) {
  KernelKey base = plan_key(1);
  std::vector<KernelKey> variants(12, base);
  variants[0].kind = KeyKind::Coiter;
  variants[1].op = SJ_OP_SPMSPV;
  variants[2].action = 1;
  variants[3].semiring = SJ_SEMIRING_MIN_PLUS;
  variants[4].schedule = SJ_SCHEDULE_INNER;
  variants[5].index = IndexType::I64;
  variants[6].value = ValueType::F32;
  variants[7].width = 16;
  variants[8].formats[2] = KeyFormat::Dense;
  variants[9].isa_features = kFeatureVp2intersect;
  variants[10].detail = 2;
  variants[11].flags = kKeyTransposeA;
  for (auto& v : variants) {
    EXPECT_NE(v, base);
    EXPECT_NE(v.hash(), base.hash()) << v.to_string();
    EXPECT_NE(v.file_name(), base.file_name());
  }
  // The hash sees lengths and every byte.
  EXPECT_NE(hash64("ab", 2), hash64("ab\0", 3));
  EXPECT_NE(hash64("", 0), hash64("", 0, 1));
}

TEST(KernelCache, HitAndMissCounts) {
  KernelCache cache(16);
  int builds = 0;
  auto build = [&] { return ++builds, int_value(7); };
  auto r1 = cache.get_or_build(plan_key(1), build);
  EXPECT_EQ(r1.source, KernelSource::Compiled);
  EXPECT_EQ(as_int(r1.value), 7);
  auto r2 = cache.get_or_build(plan_key(1), build);
  EXPECT_EQ(r2.source, KernelSource::Memory);
  EXPECT_EQ(r2.value.get(), r1.value.get());
  EXPECT_EQ(r2.build_ms, 0);
  cache.get_or_build(plan_key(2), build);
  EXPECT_EQ(cache.find(plan_key(3)), nullptr);
  EXPECT_NE(cache.find(plan_key(2)), nullptr);
  KernelCacheStats s = cache.stats();
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(s.builds, 2u);
  EXPECT_EQ(s.hits, 2u);    // r2 and find(2)
  EXPECT_EQ(s.misses, 3u);  // key 1, key 2, find(3)
  EXPECT_EQ(s.size, 2u);
  EXPECT_EQ(s.capacity, 16u);
  EXPECT_GE(s.build_ms, 0);
  std::string json = s.to_json();
  EXPECT_NE(json.find("\"hits\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"builds\":2"), std::string::npos) << json;
  cache.reset_stats();
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_EQ(KernelCache(0).capacity(), KernelCache::kDefaultCapacity);
}

TEST(KernelCache, SingleFlightUnderEightThreads) {
  KernelCache cache;
  std::atomic<int> invocations{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  std::vector<const void*> got(8);
  std::vector<KernelSource> sources(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < 8) std::this_thread::yield();
      auto r = cache.get_or_build(plan_key(42), [&] {
        ++invocations;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return int_value(42);
      });
      got[t] = r.value.get();
      sources[t] = r.source;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(invocations.load(), 1);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(got[t], got[0]);
  EXPECT_EQ(std::count(sources.begin(), sources.end(), KernelSource::Compiled), 1);
  KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.builds, 1u);
  EXPECT_EQ(s.hits + s.misses, 8u);
  EXPECT_EQ(s.hits + s.waits, 7u);  // everyone but the builder found it or waited for it
  EXPECT_GE(s.build_ms, 90);
  // Different keys build in parallel, each once.
  invocations = 0;
  threads.clear();
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      cache.get_or_build(plan_key(100 + t % 4), [&] {
        ++invocations;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return int_value(t);
      });
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(invocations.load(), 4);
}

TEST(KernelCache, BuilderFailureReachesWaitersAndIsNotCached) {
  KernelCache cache;
  std::atomic<int> invocations{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      try {
        cache.get_or_build(plan_key(5), [&]() -> std::shared_ptr<const void> {
          ++invocations;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          throw Error(SJ_ERR_JIT, "codegen failed");
        });
      } catch (const Error& e) {
        if (e.status() == SJ_ERR_JIT) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 4);
  EXPECT_LE(invocations.load(), 4);
  EXPECT_GE(cache.stats().build_failures, 1u);
  EXPECT_EQ(cache.size(), 0u);
  // The next request builds again and succeeds.
  auto r = cache.get_or_build(plan_key(5), [] { return int_value(5); });
  EXPECT_EQ(as_int(r.value), 5);
  EXPECT_EQ(r.source, KernelSource::Compiled);
  // A builder that returns null is not cached either.
  int n = 0;
  cache.get_or_build(plan_key(6), [&]() -> std::shared_ptr<const void> { return ++n, nullptr; });
  cache.get_or_build(plan_key(6), [&]() -> std::shared_ptr<const void> { return ++n, nullptr; });
  EXPECT_EQ(n, 2);
}

TEST(KernelCache, LruEvictionOrderAndRelease) {
  KernelCache cache(3);
  std::atomic<int> released{0};
  auto counted = [&](int v) {
    return std::shared_ptr<const void>(new int(v), [&released](const void* p) {
      ++released;
      delete static_cast<const int*>(p);
    });
  };
  for (int i = 1; i <= 3; ++i) cache.get_or_build(plan_key(i), [&] { return counted(i); });
  // Use 1 so that 2 becomes the least recently used.
  EXPECT_EQ(cache.get_or_build(plan_key(1), [&] { return counted(-1); }).source, KernelSource::Memory);
  cache.get_or_build(plan_key(4), [&] { return counted(4); });  // evicts 2
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(released.load(), 1);
  std::shared_ptr<const void> held = cache.find(plan_key(3));  // 3 is now most recent
  ASSERT_NE(held, nullptr);
  cache.get_or_build(plan_key(5), [&] { return counted(5); });  // evicts 1
  EXPECT_EQ(cache.find(plan_key(2)), nullptr);
  EXPECT_EQ(cache.find(plan_key(1)), nullptr);
  EXPECT_NE(cache.find(plan_key(3)), nullptr);
  EXPECT_NE(cache.find(plan_key(4)), nullptr);
  EXPECT_NE(cache.find(plan_key(5)), nullptr);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.stats().evictions, 2u);
  // Shrinking evicts the least recently used at once (order now 5, 4, 3 -> keeps 5); a value
  // still held by someone lives on after eviction.
  cache.set_capacity(1);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_NE(cache.find(plan_key(5)), nullptr);
  EXPECT_EQ(cache.find(plan_key(3)), nullptr);
  EXPECT_EQ(as_int(held), 3);
  int before = released.load();
  held.reset();
  EXPECT_EQ(released.load(), before + 1);
  // Rebuilding an evicted key is a miss and a build.
  uint64_t builds = cache.stats().builds;
  cache.get_or_build(plan_key(3), [&] { return counted(3); });
  EXPECT_EQ(cache.stats().builds, builds + 1);
  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
}

TEST(KernelCache, InsertEraseAndDiskSource) {
  KernelCache cache(8);
  cache.insert(plan_key(1), int_value(1));
  EXPECT_EQ(as_int(cache.find(plan_key(1))), 1);
  cache.insert(plan_key(1), int_value(2));
  EXPECT_EQ(as_int(cache.find(plan_key(1))), 2);
  EXPECT_TRUE(cache.erase(plan_key(1)));
  EXPECT_FALSE(cache.erase(plan_key(1)));
  auto r = cache.get_or_build(plan_key(9), [](KernelSource& src) {
    src = KernelSource::Disk;
    return int_value(9);
  });
  EXPECT_EQ(r.source, KernelSource::Disk);
  EXPECT_EQ(cache.stats().disk_loads, 1u);
  EXPECT_EQ(to_string(KernelSource::Disk), "disk");
  EXPECT_EQ(to_string(KernelSource::Compiled), "compiled");
  EXPECT_EQ(to_string(KernelSource::Memory), "memory");
}

}  // namespace
}  // namespace sj::cache
