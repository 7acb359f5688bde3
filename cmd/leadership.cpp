#include "cmd/leadership.h"

#include <algorithm>

#include "kube/client.h"

namespace vscaler::cmd {

kube::Result<std::unique_ptr<Leadership>> Leadership::create(const Options& options,
                                                             const kube::ClientConfig& config,
                                                             metrics::Registry& registry) {
  auto& status = registry
                     .gauge("leader_election_master_status",
                            "Gauge of if the reporting system is master of the relevant lease, 0 "
                            "indicates backup, 1 indicates master. 'name' is the string used to "
                            "identify the lease.",
                            {"name"})
                     .with({"vscaler"});
  std::unique_ptr<Leadership> leadership(new Leadership());
  if (!options.leader_elect) {
    status.set(1);  // the only replica: it leads
    return leadership;
  }
  kube::LeaderElectionConfig election;
  election.lease_namespace = options.leader_election_namespace.empty()
                                 ? kube::default_lease_namespace()
                                 : options.leader_election_namespace;
  election.identity = kube::make_identity();
  if (auto valid = kube::validate(election); !valid.ok()) return kube::fail(valid.error());

  // Each attempt must end well within the renew deadline, so a hung connection costs one
  // attempt, not the leadership.
  kube::ClientConfig elector_config = config;
  elector_config.request_timeout = election.renew_deadline / 2;
  elector_config.connect_timeout = std::min(elector_config.connect_timeout, election.retry_period);
  elector_config.max_connections = 2;
  auto client = kube::Client::connect(elector_config);
  if (!client.ok()) return kube::fail("leader election client: " + client.error());
  leadership->api_ = std::make_unique<kube::ClientLeaseApi>(*client);

  kube::LeaderCallbacks callbacks;
  Leadership* self = leadership.get();
  callbacks.on_started_leading = [&status, self] {
    status.set(1);
    std::function<void()> hook;
    {
      std::lock_guard lock(self->hook_mutex_);
      hook = self->on_started_leading_;
    }
    if (hook) hook();
  };
  callbacks.on_stopped_leading = [&status] { status.set(0); };
  leadership->elector_ =
      std::make_unique<kube::LeaderElector>(*leadership->api_, std::move(election), callbacks);
  return leadership;
}

Leadership::~Leadership() {
  stop();
}

const kube::LeaderGate& Leadership::gate() const {
  if (elector_) return *elector_;
  return always_;
}

void Leadership::start(std::function<void()> on_started_leading) {
  {
    std::lock_guard lock(hook_mutex_);
    on_started_leading_ = std::move(on_started_leading);
  }
  if (elector_) elector_->start();
}

void Leadership::stop() {
  if (elector_) elector_->stop();
}

}  // namespace vscaler::cmd
