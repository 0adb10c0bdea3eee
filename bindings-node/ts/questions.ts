// The model's questions (`ask_user`) in SemaCore's terms. The engine asks each question as
// a permission request whose options are its choices (`question` on the event says what
// each means); SemaCore programs see `ask:question:request` with the question and answer
// with `respondToAskQuestion({ agentId, answers })`, answers keyed by the question's text.

import type { PermissionDecision, PermissionOption, Question } from "./protocol";

/** One of SemaCore's questions. */
export interface AskQuestion {
  question: string;
  header: string;
  options: Array<{ label: string; description: string }>;
  multiSelect: boolean;
}

/** `ask:question:request`: questions for the person, from the conversation `agentId`. */
export interface AskQuestionRequestData {
  agentId: string;
  questions: AskQuestion[];
}

/** The answer to `ask:question:request` (echoed as `ask:question:response`): each
 * question's text -> the answer, a choice's label or the person's own words (several
 * labels of a multi-select question joined by `, `). */
export interface AskQuestionResponseData {
  agentId: string;
  answers: Record<string, string>;
}

/** SemaCore's request for the engine's question. */
export function askQuestionRequest(agentId: string, question: Question): AskQuestionRequestData {
  return {
    agentId,
    questions: [
      {
        question: question.question,
        header: question.header,
        options: question.choices.map(({ label, description }) => ({ label, description })),
        multiSelect: question.multiSelect,
      },
    ],
  };
}

/** The engine's answer for `answers`: the choice whose label the answer is, else the
 * person's own words, else (no answer for this question) none. */
export function questionDecision(
  question: Question,
  options: PermissionOption[],
  answers: Record<string, string> | undefined,
): PermissionDecision {
  const answer = typeof answers?.[question.question] === "string" ? answers[question.question].trim() : "";
  const byId = (id: string) => options.find((option) => option.optionId === id);
  const noAnswer = byId("no_answer");
  if (answer === "") {
    return noAnswer ? { decision: "option", optionId: noAnswer.optionId } : { decision: "deny" };
  }
  const chosen = question.choices.findIndex((choice) => choice.label === answer);
  const choice = chosen >= 0 ? options[chosen] : undefined;
  if (choice) return { decision: "option", optionId: choice.optionId };
  const own = byId("own_answer");
  return own ? { decision: "option", optionId: own.optionId, message: answer } : { decision: "deny", message: answer };
}
